# clustertwin serve: a run of each scenario, JSON and trace output, and bad input (exit 2 with
# a message that says what is wrong).
ct_cli_test(NAME cli.serve_offline_explicit_layout
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --scenario offline --precision fp8
                 --tp 1 --max-batch 256 --requests 8000 --trace serve-trace.json
            STDOUT "tokens/s")
ct_cli_test(NAME cli.serve_json_keys_carry_units
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --scenario offline --precision fp8
                 --tp 1 --requests 8000 --json -
            STDOUT "\"tokens_per_s_per_gpu\"")
ct_cli_test(NAME cli.serve_server_reports_best_effort_when_nothing_meets
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --scenario server --precision fp8
                 --tp 1 --requests 400 --ttft-limit 1ms --tpot-limit 1ms
            STDOUT "no rate meets the limits")
ct_cli_test(NAME cli.serve_auto_on_one_node
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --scenario server --precision fp8
                 --serving auto --requests 12000 --threads 2
            STDOUT "frontier of each kind")
# The generation breakdown (issue 5's seed claim, per GPU, one factor per hardware difference).
ct_cli_test(NAME cli.serve_compare_breaks_down_the_generation_ratio
            ARGS serve --cluster hgx-b200*1 --model deepseek-r1 --scenario offline --precision fp8
                 --compare hgx-h200*1 --threads 2
            STDOUT "over hgx-h200")
ct_cli_test(NAME bad.serve_compare_unknown_cluster RC 2
            ARGS serve --cluster hgx-b200*1 --model deepseek-r1 --scenario offline --precision fp8
                 --compare hgx-h201*1
            STDERR "hgx-h201")
# Run length: a request count too small to load the GPUs is refused with what it would take
# (it used to report the drain as offline throughput, and empty queues as a compliant rate).
ct_cli_test(NAME bad.serve_too_few_requests_offline RC 2
            ARGS serve --cluster gb300-nvl72*1 --model deepseek-r1 --scenario offline --tp 8
                 --dp-attention --requests 3000
            STDERR "too few for a steady state")
ct_cli_test(NAME bad.serve_too_few_requests_server RC 2
            ARGS serve --cluster gb300-nvl72*1 --model deepseek-r1 --scenario server --tp 8
                 --dp-attention --requests 3000
            STDERR "too few for a steady state")
ct_cli_test(NAME bad.serve_model_does_not_fit RC 2
            ARGS serve --cluster hgx-h100*1 --model llama3.1-405b --precision fp8 --tp 2
                 --scenario offline
            STDERR "exceed the 80.0 GB usable by")
ct_cli_test(NAME bad.serve_layout_does_not_match_gpus RC 2
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --gpus 6 --tp 4 --scenario offline
            STDERR "does not divide the 6 GPUs")
ct_cli_test(NAME bad.serve_unknown_dataset RC 2
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --dataset mlperf-llama2-70c
            STDERR "did you mean 'mlperf-llama2-70b'")
ct_cli_test(NAME bad.serve_no_dataset_for_model RC 2
            ARGS serve --cluster hgx-h200*1 --model gpt3-175b --scenario offline
            STDERR "no dataset for model 'gpt3-175b'")
ct_cli_test(NAME bad.serve_unknown_scenario RC 2
            ARGS serve --scenario online
            STDERR "expected offline, server or interactive")
ct_cli_test(NAME bad.serve_bad_limit_unit RC 2
            ARGS serve --cluster hgx-h200*1 --model llama2-70b --tp 1 --ttft-limit 2GB
            STDERR "--ttft-limit")
# EPLB redundant experts and two-batch overlap as flags: they reach the layout (its label), and
# an expert count ep does not divide says how many redundant experts would make it divide.
ct_cli_test(NAME cli.serve_redundant_experts_and_two_batch_overlap
            ARGS serve --cluster hgx-h100*9 --model deepseek-r1 --precision fp8 --tp 72
                 --dp-attention --redundant-experts 32 --two-batch-overlap --max-batch 256
                 --scenario offline --isl 2000 --osl 100
            STDOUT "DEP72 +32r TBO x1")
ct_cli_test(NAME bad.serve_experts_not_divisible_by_ep RC 2
            ARGS serve --cluster hgx-h100*9 --model deepseek-r1 --precision fp8 --tp 72
                 --dp-attention --scenario offline
            STDERR "32 redundant experts would make them divisible")
