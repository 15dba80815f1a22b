# clustertwin schedule / goodput / export: runs, bad input (exit 2 with a clear message), and the
# Slurm tree export checked by Debian's real slurmctld (skipped when it is not installed).
set(SCHED ${CMAKE_CURRENT_SOURCE_DIR}/scheduler)
# Goldens (CT_UPDATE_GOLDENS=1 rewrites them): eight NVL72 racks, a synthetic LLM mix with
# failures (20x the Llama 3 rates so that 3 days see some), block vs first-fit placement.
ct_cli_test(NAME sched.flagship_two_placements
            ARGS schedule --cluster gb300-nvl72*8 --synthetic llm:jobs=2000 --days 3 --compare block,first-fit --spares 2 --failure-scale 20 -q
            GOLDEN scheduler/golden/schedule_gb300x8_compare.txt LABELS golden)
ct_cli_test(NAME sched.report_has_the_schedule_section
            ARGS schedule --cluster gb300-nvl72*4 --synthetic llm:jobs=300 --days 2 --compare block,kueue --spares 2 --failure-scale 20 --report schedule-report.html
            STDERR "wrote schedule-report.html")

# Other clusters and inputs: H100 servers (the mix's layouts widened to fit 80 GB), StepFun's
# fault log replayed, the Lingjun switch tree exported as a 3-tier topology/tree.
ct_cli_test(NAME sched.hgx_synthetic_fits_gpu_memory
            ARGS schedule --cluster hgx-h100*64 --synthetic llm:jobs=300 --days 2 --placement tree -q
            STDOUT "synthetic training jobs got more tensor or pipeline parallelism to fit in GPU memory")
ct_cli_test(NAME sched.stepfun_fault_replay
            ARGS schedule --cluster hgx-h100*400 --fault-replay ${SCHED}/data/stepfun_fault_intervals.csv --synthetic llm:jobs=500 --days 30 -q
            STDOUT "GPUs down (time share)")
ct_cli_test(NAME sched.export_lingjun_tree
            ARGS export slurm --tree-file ${SCHED}/data/lingjun_topo.csv --format tree
            STDOUT "SwitchName=G6 Switches=G6-P10,G6-P12,G6-P8")

# Same seed, same bytes (JSON with the timeline and the failure log), and another seed differs.
add_test(NAME sched.same_seed_same_bytes
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 "-DARGS=schedule --cluster gb300-nvl72*8 --synthetic llm:jobs=2000 --days 3 --compare block,first-fit --spares 2 --failure-scale 20"
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR} -P ${SCHED}/same_seed.cmake)
set_tests_properties(sched.same_seed_same_bytes PROPERTIES LABELS cli)
ct_cli_test(NAME sched.philly_week_fifo
            ARGS schedule --cluster hgx-h100*352 --trace ${SCHED}/data/philly_week.csv --vc-quotas ${SCHED}/data/philly_vc.csv --days 7 --policy fifo --placement tree --failures off -q
            STDOUT "jobs finished")
ct_cli_test(NAME sched.goodput_llama3
            ARGS goodput --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b --tp 8 --pp 16 --vpp 4 --global-batch 2048 --recompute full --days 54 --no-sweep
            GOLDEN scheduler/golden/goodput_llama3.txt LABELS golden)
ct_cli_test(NAME sched.export_block ARGS export slurm --cluster azure-ndv6-gb300 --format block --spares 2
            STDOUT "BlockSizes=16,32,64,128,256,512,1024")
ct_cli_test(NAME sched.export_kueue ARGS export kueue --cluster gb300-nvl72*2
            STDOUT "nvidia.com/gpu.clique")
ct_cli_test(NAME bad.sched_unknown_policy RC 2 ARGS schedule --policy lifo --days 1
            STDERR "--policy: unknown queue policy 'lifo' (expected fifo, easy or conservative)")
ct_cli_test(NAME bad.sched_unknown_placement RC 2 ARGS schedule --compare block,worst-fit --days 1
            STDERR "--compare: unknown placement policy 'worst-fit'")
ct_cli_test(NAME bad.sched_malformed_rows RC 2 ARGS schedule --trace ${SCHED}/bad/malformed.csv --days 1
            STDERR "malformed.csv:3: gpus: expected a whole number >= 1, got 'eight'")
ct_cli_test(NAME bad.sched_malformed_rows_skipped ARGS schedule --cluster gb300-nvl72*2 --trace ${SCHED}/bad/malformed.csv --days 1 --bad-rows skip -q
            STDOUT "jobs skipped (bad input)")
ct_cli_test(NAME bad.sched_job_too_big_skipped ARGS schedule --cluster gb300-nvl72*2 --trace ${SCHED}/bad/too-big.csv --days 1 --bad-rows skip -q
            STDOUT "note: job 1 (row 3) asks for 9000 GPUs; the cluster has 144")
ct_cli_test(NAME bad.sched_bad_rows_flag RC 2 ARGS schedule --bad-rows maybe --days 1
            STDERR "--bad-rows: expected stop or skip, got 'maybe'")
ct_cli_test(NAME bad.sched_unknown_single_placement RC 2 ARGS schedule --placement worst-fit --days 1
            STDERR "--placement: unknown placement policy 'worst-fit'")
ct_cli_test(NAME bad.sched_trace_and_synthetic RC 2 ARGS schedule --trace ${SCHED}/bad/too-big.csv --synthetic llm --days 1
            STDERR "give --trace or --synthetic, not both")
ct_cli_test(NAME bad.goodput_more_gpus_than_the_cluster RC 2 ARGS goodput --cluster gb300-nvl72*2 --gpus 1024
            STDERR "--gpus 1024 is more than cluster 'gb300-nvl72*2' has (144)")
ct_cli_test(NAME bad.sched_job_too_big RC 2 ARGS schedule --cluster gb300-nvl72*2 --trace ${SCHED}/bad/too-big.csv --days 1
            STDERR "job 1 (row 3) asks for 9000 GPUs; the cluster has 144")
ct_cli_test(NAME bad.sched_spares_leave_nothing RC 2 ARGS schedule --cluster gb300-nvl72*2 --synthetic llm:jobs=10 --days 1 --spares 18
            STDERR "--spares 18 leaves no capacity: base blocks (NVLink domains) have 18 nodes")
ct_cli_test(NAME bad.sched_unknown_synthetic RC 2 ARGS schedule --synthetic lmm --days 1
            STDERR "unknown preset 'lmm' (did you mean 'llm'")
ct_cli_test(NAME bad.goodput_bad_interval RC 2 ARGS goodput --gpus 72 --tp 4 --pp 2 --checkpoint soon
            STDERR "--checkpoint: expected auto or an interval")
ct_cli_test(NAME bad.export_unknown_target RC 2 ARGS export pbs STDERR "export: expected slurm or kueue, got 'pbs'")
ct_cli_test(NAME bad.export_unknown_format RC 2 ARGS export slurm --format torus
            STDERR "--format: expected block, tree or yaml, got 'torus'")

# Debian's Slurm (22.05) reads the tree export: slurmctld on loopback, then scontrol show topology.
add_test(NAME slurm.tree_export_accepted_by_slurmctld
         COMMAND ${SCHED}/slurm_tree_test.sh $<TARGET_FILE:clustertwin> ${CMAKE_CURRENT_BINARY_DIR}/slurm-tree)
set_tests_properties(slurm.tree_export_accepted_by_slurmctld PROPERTIES LABELS "cli;slurm" TIMEOUT 120
                     SKIP_RETURN_CODE 77 RUN_SERIAL TRUE)
