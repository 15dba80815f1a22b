# Hardened edges (issue 19): every reproducer of the issue, refused with a clear message (exit 2)
# or handled sanely, never a crash, a hang, a wrapped number or a silently overwritten file.
set(HOSTILE ${CMAKE_CURRENT_SOURCE_DIR}/cli/hostile)
set(SAMPLE ${CMAKE_CURRENT_SOURCE_DIR}/report/sample_results.json)

# Numbers: one checked way in (base/number.h), messages with the flag, expected and actual.
ct_cli_test(NAME hard.flag_zero_gpus RC 2 ARGS train --cluster hgx-h100*4 --gpus 0
            STDERR "--gpus: expected an integer in [1, 67108864], got 0")
ct_cli_test(NAME hard.flag_trailing_junk RC 2 ARGS train --cluster hgx-h100*4 --tp 12abc
            STDERR "--tp: expected an integer in [1, 67108864], got '12abc' (not a whole number)")
ct_cli_test(NAME hard.flag_octal_is_decimal RC 2 ARGS train --cluster hgx-h100*4 --zero 010
            STDERR "--zero: expected an integer in [0, 3], got 10")
ct_cli_test(NAME hard.flag_nan_refused RC 2
            ARGS train --cluster hgx-h100*4 --model llama3.1-8b --framework-overhead nan
            STDERR "--framework-overhead: expected a number in [0, 10], got 'nan'")
ct_cli_test(NAME hard.micro_batch_overflow RC 2
            ARGS train --cluster hgx-h100*4 --model llama3.1-8b --tp 8 --micro-batch 4611686018427387904 --global-batch 16
            STDERR "--micro-batch: expected an integer in [1, 1073741824], got 4611686018427387904")
ct_cli_test(NAME hard.tokens_inf RC 2 ARGS train --cluster hgx-h100*4 --model llama3.1-8b --tp 8 --tokens inf
            STDERR "--tokens: expected a number in [1, 1e+18] (a count such as 15T or 2e12), got 'inf'")
ct_cli_test(NAME hard.serve_tiny_rate RC 2
            ARGS serve --cluster gb300-nvl72*1 --tp 8 --ep 8 --rate 1e-9
            STDERR "4000 requests arrive over more than 3155760000 s (100 years), the limit of simulated time")
ct_cli_test(NAME hard.goodput_days RC 2 ARGS goodput --cluster gb300-nvl72*2 --days 1e6
            STDERR "--days: expected a number in (0, 36525], got 1000000")
ct_cli_test(NAME hard.schedule_days_inf RC 2 ARGS schedule --cluster gb300-nvl72*2 --days inf
            STDERR "--days: expected a number in (0, 36525], got 'inf'")
ct_cli_test(NAME hard.bf_interval_zero RC 2 ARGS schedule --cluster gb300-nvl72*2 --bf-interval 0
            STDERR "--bf-interval: expected a number in [1,")
ct_cli_test(NAME hard.bf_window_nan RC 2 ARGS schedule --cluster gb300-nvl72*2 --bf-window nan
            STDERR "--bf-window: expected a number in [1,")
ct_cli_test(NAME hard.failure_scale_nan RC 2 ARGS schedule --cluster gb300-nvl72*2 --failure-scale nan
            STDERR "--failure-scale: expected a number in [0, 1000000], got 'nan'")
ct_cli_test(NAME hard.collective_channels RC 2 ARGS collective --cluster gb300-nvl72*1 --channels 2147483647
            STDERR "--channels: expected an integer in [1, 64], got 2147483647")
ct_cli_test(NAME hard.model_huge_gpt RC 2
            ARGS model show gpt --layers 2147483647 --hidden 2147483647 --heads 8
            STDERR "--layers: expected an integer in [1, 100000], got 2147483647")
ct_cli_test(NAME hard.shorthand_wrap RC 2 ARGS describe gb300-nvl72*4294967304
            STDERR "expected SYSTEM*COUNT with COUNT >= 1, got '4294967304'")
ct_cli_test(NAME hard.search_huge_batch RC 2 ARGS search --cluster hgx-h100*4 --model llama3.1-8b
            --global-batch 9223372036854775807
            STDERR "--global-batch: expected an integer in [1, 1073741824], got 9223372036854775807")
ct_cli_test(NAME hard.search_7_gpus ARGS search --cluster hgx-h100*1 --gpus 7 --model llama3.1-8b --json -
            STDOUT "\"global_batch\": 1,")
ct_cli_test(NAME hard.synthetic_jobs RC 2 ARGS schedule --cluster gb300-nvl72*2 --synthetic llm:jobs=99999999999
            STDERR "--synthetic: jobs: expected an integer in [0, 10000000], got 99999999999")
ct_cli_test(NAME hard.trace_row_far_future RC 2 ARGS schedule --cluster gb300-nvl72*2 --trace ${HOSTILE}/late-row.csv
            STDERR "submit time after the first job's: expected a time in [0, 3155760000 s] (100 years), got 10000000000 s")

# Extreme numbers that crashed, hung or printed nonsense before (the hardening probe of every verb).
ct_cli_test(NAME hard.tokens_below_one RC 2 ARGS train --cluster hgx-h100*4 --model llama3.1-8b --tp 8 --tokens 1e-300
            STDERR "--tokens: expected a number in [1, 1e+18]")
# A step of 2^25 one-token sequences in micro-batches of one: 2^23 passes the event model holds
# (2^30 of them once took tens of GB before anything was said).
ct_cli_test(NAME hard.train_micro_batch_passes RC 2
            ARGS train --cluster hgx-h100*4 --model llama3.1-8b --tp 8 --global-batch 33554432 --seq-len 1
            STDERR "micro-batches*pp*vpp = 8388608 x 1 x 1 is more than the limit of 4194304 micro-batch passes per step (use a larger --micro-batch or a smaller --global-batch)")
ct_cli_test(NAME hard.serve_rate_beyond_the_clock RC 2
            ARGS serve --cluster gb300-nvl72*1 --model llama2-70b --tp 2 --rate 1e308
            STDERR "--rate: expected a number in (0, 1000000000], got 1e+308")
ct_cli_test(NAME hard.goodput_checkpoint_huge RC 2
            ARGS goodput --cluster gb300-nvl72*2 --model llama3.1-8b --gpus 144 --tp 8 --checkpoint 1e308 --no-sweep
            STDERR "--checkpoint: expected auto or an interval (seconds, or '900 s') in [1 s, 1262304000 s] (40 years), got '1e308' (too long)")
ct_cli_test(NAME hard.goodput_checkpoint_tiny RC 2
            ARGS goodput --cluster gb300-nvl72*2 --model llama3.1-8b --gpus 144 --tp 8 --checkpoint 1e-9 --no-sweep
            STDERR "got '1e-9' (too short)")
ct_cli_test(NAME hard.goodput_checkpoint_hex RC 2
            ARGS goodput --cluster gb300-nvl72*2 --model llama3.1-8b --gpus 144 --tp 8 --checkpoint 0x10 --no-sweep
            STDERR "--checkpoint: expected auto or an interval")
ct_cli_test(NAME hard.goodput_storage_zero RC 2
            ARGS goodput --cluster gb300-nvl72*2 --model llama3.1-8b --gpus 144 --tp 8 --storage-write "0 B/s" --no-sweep
            STDERR "--storage-write: expected a bandwidth > 0, got '0 B/s'")
ct_cli_test(NAME hard.schedule_sample_tiny RC 2 ARGS schedule --cluster gb300-nvl72*2 --sample-minutes 1e-9 -q
            STDERR "--sample-minutes: 1e-09 minutes over 30 days is 4.32e+13 timeline samples, more than the limit of 100000 (give at least 0.432 minutes)")
ct_cli_test(NAME hard.schedule_bf_interval_tiny RC 2 ARGS schedule --cluster gb300-nvl72*2 --bf-interval 1e-9 -q --days 1
            STDERR "--bf-interval: expected a number in [1, 3155760000], got 1e-09")
ct_cli_test(NAME hard.sweep_lhs_integer_beyond_2_53 RC 2 ARGS sweep ${HOSTILE}/lhs-integer-huge.yaml --db lhs-huge.db
            STDERR "lhs-integer-huge.yaml:13: latin_hypercube: 'workload.training.micro_batch': expected bounds within [-9007199254740992, 9007199254740992] (2^53, a double's exact integers), got [1, 1e+300]")
# A catalog GPU slower than any GPU, idle above its TGP: refused when the catalog loads.
set(SLOW_GPU ${HOSTILE}/catalog-slow-gpu)
ct_cli_test(NAME hard.catalog_gpu_flops_floor RC 2 ARGS --catalog ${SLOW_GPU} catalog list gpus
            STDERR "slow.yaml:9: gpu.peak_flops.bf16.value: expected at least 1 TFLOP/s (slower than any GPU, whose kernel times would overflow the clock), got 1e-300 TFLOP/s")
ct_cli_test(NAME hard.catalog_gpu_bandwidth_floor RC 2 ARGS --catalog ${SLOW_GPU} catalog list gpus
            STDERR "slow.yaml:12: gpu.hbm_bandwidth: expected at least 1 GB/s (slower than any GPU, whose kernel times would overflow the clock), got 1e-297 GB/s")
ct_cli_test(NAME hard.catalog_gpu_idle_above_tgp RC 2 ARGS --catalog ${SLOW_GPU} catalog list gpus
            STDERR "slow.yaml:17: gpu.idle_power: idle_power (7.50 kW) is not below tgp (700 W)")
# Schedule side files: a quota of 1e308 nodes overflowed (UBSan: signed overflow), a fault at day
# 1e300 aborted in the engine's clock, and an empty file of either silently meant none.
ct_cli_test(NAME hard.vc_quota_huge RC 2 ARGS schedule --cluster gb300-nvl72*2 --vc-quotas ${HOSTILE}/vc-quota-huge.csv -q
            STDERR "vc-quota-huge.csv:2: node num: expected an integer in [0, 16777216], got '1e308' (not a whole number)")
ct_cli_test(NAME hard.vc_quota_empty RC 2 ARGS schedule --cluster gb300-nvl72*2 --vc-quotas /dev/null -q
            STDERR "/dev/null:1: no quota rows")
ct_cli_test(NAME hard.fault_replay_far_future RC 2 ARGS schedule --cluster gb300-nvl72*2 --fault-replay ${HOSTILE}/fault-far-future.csv -q
            STDERR "fault-far-future.csv:2: start_day: expected a time in [0, 3155760000 s] (100 years), got 8.64e+304 s")
ct_cli_test(NAME hard.fault_replay_empty RC 2 ARGS schedule --cluster gb300-nvl72*2 --fault-replay /dev/null -q
            STDERR "/dev/null:1: no fault rows")

# Exports: what the format cannot hold is refused, never written.
ct_cli_test(NAME hard.slurm_prefix_injection RC 2 ARGS export slurm --cluster gb300-nvl72*1 --node-prefix "x SwitchName=evil"
            STDERR "--node-prefix: 'x SwitchName=evil' is not a valid host name")
ct_cli_test(NAME hard.kueue_prefix_uppercase RC 2 ARGS export kueue --cluster gb300-nvl72*1 --node-prefix Node_
            STDERR "Kubernetes node names are lowercase")

# Inputs: duplicate keys name both lines; not-a-document and directories are refused.
ct_cli_test(NAME hard.yaml_duplicate_key RC 2 ARGS describe ${HOSTILE}/duplicate-key.yaml
            STDERR "duplicate-key.yaml:5: duplicate key 'count' (first at line 4, again at line 5)")
ct_cli_test(NAME hard.json_duplicate_key RC 2 ARGS report --from ${HOSTILE}/duplicate-key.json --out dup.html
            STDERR "duplicate-key.json:3: duplicate key 'training' (first at line 2, again at line 3)")
ct_cli_test(NAME hard.report_not_results RC 2 ARGS report --from ${HOSTILE}/not-results.json --out nr.html
            STDERR "not a clustertwin results document")
ct_cli_test(NAME hard.report_deep_json RC 2 ARGS report --from ${HOSTILE}/deep.json --out deep.html
            STDERR "nested deeper than 64 levels")
ct_cli_test(NAME hard.directory_as_input RC 2 ARGS describe ${HOSTILE}
            STDERR "is a directory")

# Outputs: two outputs on one path refused; a failed write is exit 1 with the system's message.
ct_cli_test(NAME hard.same_output_twice RC 2
            ARGS train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --json same.json --trace same.json
            STDERR "--json and --trace name the same file 'same.json'")
# An option given an empty value (`--json "$OUT"` with OUT unset) ran without it, exit 0.
add_test(NAME hard.empty_option_values
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/empty_values.sh $<TARGET_FILE:clustertwin>)
set_tests_properties(hard.empty_option_values PROPERTIES LABELS cli)
ct_cli_test(NAME hard.scenario_empty_values RC 2
            ARGS run ${HOSTILE}/scenario-empty-values.yaml --no-report
            STDERR "scenario-empty-values.yaml:9: workload.training.tokens: empty value (give one, or leave the key out for its default)")
ct_cli_test(NAME hard.two_outputs_on_stdout RC 2
            ARGS train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --json - --trace -
            STDERR "--json and --trace both write to standard output ('-', '-'): give each output its own path")
ct_cli_test(NAME hard.json_to_full_device RC 1 ARGS describe gb300-nvl72*1 --json /dev/full
            STDERR "/dev/full: write failed: No space left on device")
add_test(NAME hard.stdout_to_full_device
         COMMAND sh -c "$<TARGET_FILE:clustertwin> describe gb300-nvl72*1 >/dev/full; test $? -eq 1")
add_test(NAME hard.killed_while_writing_keeps_the_old_file
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/killed_while_writing.sh $<TARGET_FILE:clustertwin>
                 ${SAMPLE} ${CMAKE_CURRENT_BINARY_DIR}/killed-while-writing)
# A calibration profile through a pipe (`--calibration <(...)`) is read once for every reader of
# the job: train and serve give the same output as from the file.
add_test(NAME hard.calibration_profile_through_a_pipe
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/profile_through_pipe.sh $<TARGET_FILE:clustertwin>
                 ${CMAKE_CURRENT_BINARY_DIR}/profile-through-pipe)
set_tests_properties(hard.stdout_to_full_device hard.killed_while_writing_keeps_the_old_file
                     hard.calibration_profile_through_a_pipe PROPERTIES LABELS cli)
# --max-events bounds a long simulated run: it stops with an error saying how far it got.
ct_cli_test(NAME hard.schedule_max_events RC 2
            ARGS schedule --cluster hgx-h100*352 --trace ${CMAKE_CURRENT_SOURCE_DIR}/scheduler/data/philly_week.csv --days 7 --policy fifo --placement tree --failures off -q --max-events 500
            STDERR "the schedule simulation stopped after 500 events (max_events; the default bound is 1073741824) at day ")
ct_cli_test(NAME hard.goodput_max_events RC 2
            ARGS goodput --cluster gb300-nvl72*2 --model llama3.1-8b --gpus 144 --tp 8 --pp 1 --days 30 --no-sweep --max-events 10
            STDERR "stopped after 10 events")
ct_cli_test(NAME hard.max_events_zero RC 2 ARGS schedule --cluster gb300-nvl72*2 --max-events 0
            STDERR "--max-events: expected")
# A calibration profile's latency term above a second is a unit slip (the fitter's bounds stop at
# 5 ms): refused at its file:line, instead of printing 1e300 us collectives.
ct_cli_test(NAME hard.profile_latency_term_beyond_a_second RC 2
            ARGS collective --cluster hgx-h100*1 --calibration ${HOSTILE}/profile-huge-latency.yaml
                 --min-bytes 1M --max-bytes 1M
            STDERR "profile-huge-latency.yaml:10: collectives.all_reduce.ring.simple.base: expected at most 1 s (a collective latency term), got 1e+294 s")
# power's window with no --duration ends 20 s after --stop: a far stop (property test, seed 19)
# allocated 2^31 s / 10 ms samples and aborted; a resolution of 1e-300 s cast the sample count
# out of size_t's range and drew zero waveforms with exit 0. Both are counted before allocating.
ct_cli_test(NAME hard.power_far_stop RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical
                 --stop=2147483648
            STDERR "--duration / --resolution: expected at most 2000000 samples for this job, got 2.14748e+11: a 2.14748e+09 s window at 0.01 s (--stop 2.14748e+09 s)")
ct_cli_test(NAME hard.power_tiny_resolution RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical
                 --resolution 1e-300
            STDERR "--duration / --resolution: expected at most 2000000 samples for this job, got 9.5e+301: a 95 s window at 1e-300 s")
# A 100,000 s window at the default 10 ms ran 45 s and 825 MB (release; the ASan build timed out):
# a window holds at most 2e6 samples and 3.2e7 samples x (stages + rack classes), and the refusal
# names the resolution that fits; at that resolution it runs in about 2 s.
ct_cli_test(NAME hard.power_window_beyond_sample_bound RC 2
            ARGS --quiet power --tp 8 --pp 16 --comm analytical --duration 100000
            STDERR "--duration / --resolution: expected at most 1000000 samples for this job, got 1e+07: a 100000 s window at 0.01 s (--stop 99980 s); a window holds at most 2e+06 samples and 3.2e+07 samples x (pipeline stages + rack classes), here 16 + 16; use --resolution 0.1 s or coarser, or a shorter window")
ct_cli_test(NAME hard.power_resolution_above_ten_seconds RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical
                 --resolution 11
            STDERR "--resolution")
# A price or grid intensity of 1e308 printed an inf cost and carbon: bounded at 1e6 per kWh.
ct_cli_test(NAME hard.power_price_beyond_any_grid RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical
                 --price 1e308
            STDERR "--price: expected 0 to 1e6 per kWh, got 1e+308")
ct_cli_test(NAME hard.power_grid_intensity_beyond_any_grid RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical
                 --grid-intensity 1e308
            STDERR "--grid-intensity: expected 0 to 1e6 gCO2/kWh, got 1e+308")
# calibrate's measurements hold what a tool can have measured (calibration/parse.cpp): a time in
# [1 ns, 1 day], a rate at most 1e9 requests/s or 1e12 tokens/s, a system spec's peaks and HBM
# bandwidth between the catalog's floors and 1 EFLOP/s / 1 PB/s, layout integers within
# base/number.h's limits. Each file below was fitted before (exit 0: a 1e308 us nccl-tests row,
# a 1e-300 ms GEMM with 1e97% errors, a negative TPOT, gpus 4294967304 read as 8) or failed
# after the fit (a 1e308 B/s spec: a profile that does not read back, exit 1).
set(HOSTILE_CAL ${HOSTILE}/calibrate)
set(CAL_DATA_DIR ${CMAKE_CURRENT_SOURCE_DIR}/validation/data/calibration)
ct_cli_test(NAME hard.calibrate_nccl_time_huge RC 2
            ARGS calibrate --cluster hgx-h100*2 ${HOSTILE_CAL}/nccl-tests-time-huge.txt
            STDERR "nccl-tests-time-huge.txt:26: time: expected a measured time in [0.001, 8.64e+10] us (1 ns to 1 day), got '1e308'")
ct_cli_test(NAME hard.calibrate_step_time_huge RC 2
            ARGS calibrate --cluster hgx-h100*1 --train-model llama3.1-8b ${HOSTILE_CAL}/step-time-huge.csv
            STDERR "step-time-huge.csv:2: step_time_s: expected a measured time in [1e-09, 86400] s (1 ns to 1 day), got '1e308'")
ct_cli_test(NAME hard.calibrate_step_gpus_wrap RC 2
            ARGS calibrate --cluster hgx-h100*1 --train-model llama3.1-8b ${HOSTILE_CAL}/step-gpus-wrap.csv
            STDERR "step-gpus-wrap.csv:2: gpus: expected an integer in [1, 67108864], got 4294967304")
ct_cli_test(NAME hard.calibrate_megatron_tp_wrap RC 2
            ARGS calibrate --cluster hgx-h100*8 --train-model llama3.1-8b ${HOSTILE_CAL}/megatron-tp-wrap.log
            STDERR "megatron-tp-wrap.log:11: argument tensor_model_parallel_size: expected an integer in [1, 67108864], got 4294967304")
ct_cli_test(NAME hard.calibrate_kernel_latency_tiny RC 2
            ARGS calibrate --cluster hgx-h100*1 ${HOSTILE_CAL}/gemm_bfloat16.csv ${CAL_DATA_DIR}/aic_h100_sxm_spec.yaml
            STDERR "gemm_bfloat16.csv:4: latency: expected a measured time in [1e-06, 8.64e+07] ms (1 ns to 1 day), got '1e-300'")
ct_cli_test(NAME hard.calibrate_spec_bandwidth_huge RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA_DIR}/aic_h100_gemm_bfloat16_excerpt.csv
                 ${HOSTILE_CAL}/aic-spec-bandwidth-huge.yaml
            STDERR "aic-spec-bandwidth-huge.yaml:6: mem_bw: expected an HBM bandwidth in [1e+09, 1e+15] B/s (1 GB/s to 1 PB/s), got '1e308'")
ct_cli_test(NAME hard.calibrate_serving_negative_tpot RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA_DIR}/serving_roundtrip_setup.yaml
                 ${HOSTILE_CAL}/serving-negative-tpot.jsonl
            STDERR "serving-negative-tpot.jsonl:1: mean_tpot_ms: expected 0 (none) or a measured time in [1e-06, 8.64e+07] ms (1 ns to 1 day), got '-10.1953'")
ct_cli_test(NAME hard.calibrate_loadgen_latency_huge RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA_DIR}/serving_roundtrip_setup.yaml
                 ${HOSTILE_CAL}/loadgen-latency-huge.txt
            STDERR "loadgen-latency-huge.txt:18: Max latency (ns): expected 0 (none) or a measured time in [1, 8.64e+13] ns (1 ns to 1 day), got '99999999999999999999'")
# A profile's GEMM efficiencies of 1e-300 (the reader took (0, 10]) made every GEMM 1e298 s and
# aborted train and serve in engine::to_ticks; efficiencies are now read in [1e-5, 2], the range
# calibrate fits (compute::kMinEfficiency, kMaxEfficiency), and refused at file:line.
ct_cli_test(NAME hard.train_profile_efficiency_below_the_floor RC 2
            ARGS train --cluster hgx-h100*1 --model llama3.1-8b --tp 8
                 --calibration ${HOSTILE}/profile-efficiency-tiny.yaml
            STDERR "profile-efficiency-tiny.yaml:28: compute.gemm.bf16.efficiency: row 'm=1 n=128': expected efficiencies in [1e-05, 2] (fractions of the roofline, as calibrate fits them), got '1e-300'")
ct_cli_test(NAME hard.serve_profile_efficiency_below_the_floor RC 2
            ARGS serve --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --isl 128 --osl 16
                 --scenario offline --calibration ${HOSTILE}/profile-efficiency-tiny.yaml
            STDERR "profile-efficiency-tiny.yaml:28: compute.gemm.bf16.efficiency: row 'm=1 n=128': expected efficiencies in [1e-05, 2]")
# At the floor a step can still pass the engine's clock (2^22 micro-batches of 4.7e3 s): the
# training step's sum of tasks is checked before the event model (execution/training.cpp).
ct_cli_test(NAME hard.train_step_beyond_the_clock RC 2
            ARGS train --cluster hgx-h100*1 --model llama3.1-8b --tp 8
                 --calibration ${HOSTILE}/profile-efficiency-floor.yaml --global-batch 4194304
                 --micro-batch 1
            STDERR "the training step would take up to 1.96e+10 s (4194304 x 4.66e+03 s of forward, backward and pipeline sends per micro-batch), more than the limit of simulated time (3155760000 s, 100 years)")
# A serving layout file and the flags take the same bounds (base/number.h): max_batch up to
# kMaxBatch (a file refused past 2^20 while --max-batch took 2^30), tp/pp/ep and replicas up to
# kMaxGpus, max_tokens up to kMaxTokensPerStep.
ct_cli_test(NAME hard.serving_layout_max_batch_as_the_flag
            ARGS serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --serving ${HOSTILE}/serving-max-batch-2-21.yaml --json -
            STDOUT "\"max_batch\": 2097152,")
ct_cli_test(NAME hard.serving_layout_max_batch_beyond_the_limit RC 2
            ARGS serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --serving ${HOSTILE}/serving-max-batch-beyond-limit.yaml
            STDERR "serving-max-batch-beyond-limit.yaml:5: serving.instance.max_batch: expected an integer in [1, 1073741824], got 1073741825")
# export: --gpus-per-node applies to a --tree-file cluster, --node-prefix to a catalog one (a tree
# file names its hosts); each was ignored for the other. An empty prefix was accepted (host names
# of digits alone, the same for every exported cluster). An empty argument does not survive
# ct_cli_test's list, hence sh.
ct_cli_test(NAME hard.export_gpus_per_node_without_tree_file RC 2
            ARGS export slurm --cluster gb300-nvl72*1 --gpus-per-node 4
            STDERR "--gpus-per-node requires --tree-file")
ct_cli_test(NAME hard.export_node_prefix_with_tree_file RC 2
            ARGS export slurm --tree-file ${CMAKE_CURRENT_SOURCE_DIR}/scheduler/data/lingjun_topo.csv --node-prefix gpu
            STDERR "--tree-file excludes --node-prefix")
add_test(NAME hard.export_empty_node_prefix
         COMMAND sh -c "out=$($<TARGET_FILE:clustertwin> export slurm --cluster gb300-nvl72*1 --node-prefix '' 2>&1); rc=$?; echo \"$out\"; test $rc -eq 2 && echo \"$out\" | grep -qF \"error: --node-prefix: empty value\"")
set_tests_properties(hard.export_empty_node_prefix PROPERTIES LABELS cli)
# The scenario-file probe (hostile values at every key of every workload block): `pue: 0` was
# taken for "not given" (the facility model's PUE, 1.31, printed with exit 0; 0.5 was refused),
# and a dataset beside fixed lengths was ignored, even a name that is no dataset.
ct_cli_test(NAME hard.power_pue_zero RC 2
            ARGS --quiet power --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --comm analytical --pue 0
            STDERR "--pue: expected a number in [1, 5], got 0")
ct_cli_test(NAME hard.serve_dataset_beside_fixed_lengths RC 2
            ARGS serve --cluster hgx-h200*1 --model llama3.1-8b --tp 1 --isl 128 --osl 16 --dataset nope
            STDERR "--dataset 'nope' and --isl/--osl both give the request lengths: give one")
# Scenario files with hostile values at every key (tests/cli/scenario_property.py, seeds 1-3,
# 2,292 runs, release): two refusals named no place in the file. An inline cluster the catalog
# refuses now names the scenario's `cluster:` key; a file a schedule field names (trace,
# tree_file, vc_quotas, fault_replay) that cannot be read names its field and the system's reason
# (the flag for the verb, file:line for a scenario), and a directory is refused as such.
ct_cli_test(NAME hard.scenario_inline_cluster_unknown_system RC 2
            ARGS --quiet run ${HOSTILE}/scenario-inline-unknown-system.yaml
            STDERR "scenario-inline-unknown-system.yaml:4: cluster 'inline': system: unknown system 'gb300-nvl73' (did you mean 'gb300-nvl72' or 'gb200-nvl72'?)")
ct_cli_test(NAME hard.scenario_schedule_missing_trace RC 2
            ARGS --quiet run ${HOSTILE}/scenario-schedule-missing-trace.yaml
            STDERR "scenario-schedule-missing-trace.yaml:7: trace: cannot read file 'no-such-trace.csv': No such file or directory")
ct_cli_test(NAME hard.schedule_missing_trace RC 2
            ARGS --quiet schedule --cluster gb300-nvl72*2 --days 1 --trace no-such-trace.csv
            STDERR "--trace: cannot read file 'no-such-trace.csv': No such file or directory")
ct_cli_test(NAME hard.schedule_quotas_directory RC 2
            ARGS --quiet schedule --cluster gb300-nvl72*2 --days 1 --vc-quotas ${HOSTILE}
            STDERR "--vc-quotas: '${HOSTILE}' is a directory, expected a file")
# An input that does not end (/dev/zero, /dev/urandom) was read until memory ran out (`run
# /dev/zero` still running, and growing, after minutes); every input is now read through
# base::read_all, at most base::kMaxInputBytes (1 GiB), and refused there (about 15 s, dev build).
ct_cli_test(NAME hard.endless_scenario_file RC 2 ARGS --quiet run /dev/zero
            STDERR "/dev/zero: more than 1 GiB, the most clustertwin reads from one input")
ct_cli_test(NAME hard.endless_trace RC 2
            ARGS --quiet schedule --cluster gb300-nvl72*2 --days 1 --trace /dev/zero
            STDERR "--trace: '/dev/zero': more than 1 GiB, the most clustertwin reads from one input")
# The calibration readers likewise: a measurement file and a profile given to a verb (both read
# until memory ran out before).
ct_cli_test(NAME hard.endless_calibrate_input RC 2
            ARGS --quiet calibrate --cluster hgx-h100*1 /dev/zero
            STDERR "/dev/zero: more than 1 GiB, the most clustertwin reads from one input")
# A path with braces around a field's name is written as given in messages (base::verbatim),
# not as that field's flag: '/nonexistent/{tp}/p.yaml' printed '/nonexistent/--tp/p.yaml'.
ct_cli_test(NAME hard.braces_in_a_profile_path RC 2
            ARGS --quiet train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --calibration /nonexistent/{tp}/p.yaml
            STDERR "--calibration: '/nonexistent/{tp}/p.yaml' is neither a readable profile file")
ct_cli_test(NAME hard.braces_in_a_serving_path RC 2
            ARGS --quiet serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline --serving /nonexistent/{tp}.yaml
            STDERR "cannot read serving file '/nonexistent/{tp}.yaml'")
ct_cli_test(NAME hard.braces_in_a_serving_profile_path RC 2
            ARGS --quiet serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --tp 1 --calibration /nonexistent/{tp}.yaml
            STDERR "--calibration: cannot read '/nonexistent/{tp}.yaml'")
ct_cli_test(NAME hard.endless_calibration_profile RC 2
            ARGS --quiet train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --calibration /dev/zero
            STDERR "--calibration /dev/zero: more than 1 GiB, the most clustertwin reads from one input")
# `--kv-policy reserve` without layout flags (the search's base layout) was dropped: the run
# searched with preempt and its JSON said "kv_policy": "preempt", byte for byte the run without the
# flag. The request's layout settings are now set in one place for both paths.
ct_cli_test(NAME hard.serve_kv_policy_reaches_the_search
            ARGS --quiet serve --cluster hgx-h200*1 --model llama3.1-8b --scenario offline --isl 2048 --osl 2048 --threads 1 --kv-policy reserve --json -
            STDOUT "\"kv_policy\": \"reserve\",")
# Fields the run read nowhere were dropped with exit 0: `--serving FILE --tp 2` ran the file's TP8
# (and `--serving auto --tp 2` searched), `--prefill-tp 4` without --disaggregated served TP1 with
# no prefill pool. Both are now refused, naming the field.
ct_cli_test(NAME hard.serve_layout_flag_beside_layout_file RC 2
            ARGS --quiet serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --serving ${HOSTILE}/serving-max-batch-2-21.yaml --tp 2
            STDERR "--tp given with --serving '${HOSTILE}/serving-max-batch-2-21.yaml', which sets the layout: give the layout in one place")
ct_cli_test(NAME hard.serve_prefill_without_disaggregated RC 2
            ARGS --quiet serve --cluster hgx-h200*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --tp 1 --prefill-tp 4
            STDERR "--prefill-tp sizes the prefill pool: it goes with --disaggregated")
# `--no-chunked-prefill` with the search (`--serving auto`, or no layout flags) was dropped: the
# search tried chunking on and off and kept chunking where it won (JSON "chunked_prefill": true).
# Chunking off in the base layout is now a constraint of the search.
ct_cli_test(NAME hard.serve_no_chunked_prefill_reaches_the_search
            ARGS --quiet serve --cluster hgx-h200*1 --model llama3.1-8b --scenario interactive --isl 2048 --osl 256
                 --ttft-limit "0.5 s" --tpot-limit "20 ms" --threads 1 --no-chunked-prefill --json -
            STDOUT "\"chunked_prefill\": false" STDOUT_NOT "\"chunked_prefill\": true")
# Request settings beside a layout file (`--serving FILE --kv-policy reserve`, --mtp, --runtime,
# --dispatch, ...) were dropped with exit 0: the file's values (or the layout's defaults) ran.
# Refused now, naming the flag; a value equal to the default cannot be told from none.
ct_cli_test(NAME hard.serve_request_setting_beside_layout_file RC 2
            ARGS --quiet serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --serving ${HOSTILE}/serving-max-batch-2-21.yaml --kv-policy reserve
            STDERR "--kv-policy given with --serving '${HOSTILE}/serving-max-batch-2-21.yaml', a layout file, which sets it: give it in the file")
ct_cli_test(NAME hard.serve_no_chunked_beside_layout_file RC 2
            ARGS --quiet serve --cluster hgx-h100*1 --model llama3.1-8b --isl 128 --osl 16 --scenario offline
                 --serving ${HOSTILE}/serving-max-batch-2-21.yaml --no-chunked-prefill
            STDERR "--no-chunked-prefill given with --serving")
