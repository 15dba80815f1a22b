# `clustertwin collective`: the nccl-tests table, its JSON, a golden for one NVL72 rack, and bad
# input (exit code 2 with a message naming what is wrong). Included from tests/CMakeLists.txt.
set(COLL_GOLDEN validation/data/collective)
ct_cli_test(NAME cli.collective_h100_table
            ARGS collective --cluster hgx-h100*1 --gpus 8 --min-bytes 1M --max-bytes 8M --model analytical
            STDOUT "     1048576        262144     float     sum      -1")
ct_cli_test(NAME cli.collective_json_keys
            ARGS collective --cluster hgx-h100*1 --gpus 8 --min-bytes 1G --max-bytes 1G --json -
            STDOUT "\"busbw_GBps\"")
ct_cli_test(NAME cli.collective_csv
            ARGS collective --cluster gb300-nvl72*1 --gpus 4 --op all_gather --min-bytes 1M --max-bytes 1M --format csv
            STDOUT "size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,algorithm,protocol")
ct_cli_test(NAME cli.collective_flagship
            ARGS collective --cluster azure-ndv6-gb300 --gpus 4608 --op all_reduce --min-bytes 1G --max-bytes 1G
            STDOUT "  1073741824     268435456     float     sum      -1")
ct_cli_test(NAME golden.collective_gb300_rack LABELS golden
            ARGS collective --cluster gb300-nvl72*1 --gpus 72 --op all_reduce --min-bytes 8 --max-bytes 16G
            GOLDEN ${COLL_GOLDEN}/golden_gb300_rack_all_reduce.txt)
ct_cli_test(NAME golden.collective_h100_node LABELS golden
            ARGS collective --cluster hgx-h100*1 --gpus 8 --op all_reduce --min-bytes 8 --max-bytes 16G
            GOLDEN ${COLL_GOLDEN}/golden_h100_node_all_reduce.txt)
ct_cli_test(NAME bad.collective_too_many_gpus RC 2
            ARGS collective --cluster hgx-h100*1 --gpus 9
            STDERR "--gpus 9 is more than the cluster's 8 GPUs")
ct_cli_test(NAME bad.collective_size_not_a_size RC 2
            ARGS collective --cluster hgx-h100*1 --max-bytes 16X
            STDERR "--max-bytes: expected a size like 8, 1K, 16M, 16G")
ct_cli_test(NAME bad.collective_sizes_reversed RC 2
            ARGS collective --cluster hgx-h100*1 --min-bytes 1G --max-bytes 1M
            STDERR "is below --min-bytes")
ct_cli_test(NAME bad.collective_nvls_without_nvlink_sharp RC 2
            ARGS collective --cluster dgx-a100*1 --algo nvls
            STDERR "--algo nvls cannot run here: nvls needs NVLink SHARP")
ct_cli_test(NAME bad.collective_collnet_without_sharp RC 2
            ARGS collective --cluster dgx-a100*2 --algo collnet
            STDERR "collnet needs in-network reduction (SHARP) in the scale-out switches")
ct_cli_test(NAME bad.collective_unknown_algorithm RC 2
            ARGS collective --cluster hgx-h100*1 --algo rign
            STDERR "did you mean 'ring'")
ct_cli_test(NAME bad.collective_protocol_the_algorithm_lacks RC 2
            ARGS collective --cluster hgx-h100*1 --algo nvls --protocol ll
            STDERR "--protocol ll cannot run with nvls (it runs simple)")
ct_cli_test(NAME bad.collective_pat_needs_one_gpu_per_node RC 2
            ARGS collective --cluster hgx-h100*2 --op all_gather --algo pat
            STDERR "pat needs one GPU per NVLink domain")
ct_cli_test(NAME bad.collective_unknown_dtype RC 2
            ARGS collective --cluster hgx-h100*1 --dtype floot
            STDERR "unknown dtype 'floot'")
ct_cli_test(NAME bad.collective_one_gpu RC 2
            ARGS collective --cluster hgx-h100*1 --gpus 1
            STDERR "a collective needs at least 2 GPUs")
