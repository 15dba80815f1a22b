# Golden describe output (text and JSON) of every catalog cluster and the shorthand.
set(CT_GOLDEN_CLUSTERS azure-ndv6-gb300 eos-h100 meta-llama3-h100 tyche-gb200 selene-a100 eos-dfw-h100
    deepseek-h800)
foreach(c IN LISTS CT_GOLDEN_CLUSTERS)
  ct_cli_test(NAME golden.describe.${c} ARGS describe ${c} GOLDEN scenarios/golden/describe-${c}.txt LABELS golden)
  ct_cli_test(NAME golden.describe_json.${c} ARGS describe ${c} --json - GOLDEN scenarios/golden/describe-${c}.json LABELS golden)
endforeach()
ct_cli_test(NAME golden.describe.shorthand ARGS describe gb300-nvl72*8 GOLDEN scenarios/golden/describe-gb300-nvl72x8.txt LABELS golden)
ct_cli_test(NAME golden.describe.inline_file ARGS describe ${CMAKE_SOURCE_DIR}/examples/inline-cluster.yaml
            GOLDEN scenarios/golden/describe-inline-cluster.txt LABELS golden)
# The built-in flagship is examples/azure-ndv6-gb300.yaml compiled in (cmake/embed_text.cmake),
# so this one run covers the example file too. Its serving search and the generation comparison
# take ~5 min of CPU in the sanitized dev build (~6 s in release): a longer limit. `run` without a
# file is plain `clustertwin` (the same function, run_flagship's document), and its --json is the
# results the browser test draws: the one flagship run of the suite (fixture flagship_results).
set(CT_FLAGSHIP_RESULTS ${CMAKE_CURRENT_BINARY_DIR}/flagship-results.json)
ct_cli_test(NAME golden.plain_clustertwin ARGS run --json ${CT_FLAGSHIP_RESULTS} --no-report
            GOLDEN scenarios/golden/flagship.txt LABELS golden TIMEOUT 1800)
set_tests_properties(golden.plain_clustertwin PROPERTIES FIXTURES_SETUP flagship_results)
ct_cli_test(NAME golden.train_llama405b_meta ARGS train --cluster meta-llama3-h100 --gpus 16384 --model llama3.1-405b
            --tp 8 --pp 16 --vpp 4 --global-batch 2048 --seq-len 8192 --recompute full
            GOLDEN scenarios/golden/train-llama405b-meta.txt LABELS golden)
ct_cli_test(NAME bad.train_layout_mismatch RC 2 ARGS train --cluster hgx-h100*8 --model llama3.1-70b --tp 8 --pp 4 --dp 4
            STDERR "tp*pp*dp*cp = 8*4*4*1 = 128 does not match gpus = 64")
ct_cli_test(NAME bad.train_does_not_fit RC 2 ARGS train --cluster hgx-h100*8 --model llama3.1-405b --tp 8 --pp 1
            STDERR "does not fit in GPU memory")
# Over by a little: the error says by how much and the cheapest change that fits (dense and MoE).
ct_cli_test(NAME bad.train_does_not_fit_dense_fix RC 2 ARGS train --cluster hgx-h100*8 --model llama3.1-70b
            --tp 4 --pp 8 --vpp 5 --global-batch 128 --seq-len 8192
            STDERR "the cheapest change that fits: --recompute-modules layernorm (")
ct_cli_test(NAME bad.train_does_not_fit_moe_fix RC 2 ARGS train --cluster hgx-h100*32 --model qwen3-235b-a22b
            --tp 2 --pp 8 --vpp 4 --ep 32 --global-batch 2048 --seq-len 4096 --routing measured
            STDERR "the cheapest change that fits: --recompute-modules moe_act,layernorm (")
ct_cli_test(NAME bad.train_unknown_model RC 2 ARGS train --cluster hgx-h100*8 --model llama3-405b --tp 8
            STDERR "did you mean")
ct_cli_test(NAME bad.train_too_many_gpus RC 2 ARGS train --cluster hgx-h100*8 --gpus 128 --model llama3.1-8b
            STDERR "is more than cluster")
ct_cli_test(NAME bad.train_heads_not_divisible RC 2 ARGS train --cluster hgx-h100*8 --model llama3.1-8b --tp 3 --dp 1 --gpus 3
            STDERR "does not divide the model's 32 attention heads")
ct_cli_test(NAME bad.scenario_unknown_key RC 2 ARGS run ${CMAKE_SOURCE_DIR}/tests/cli/bad/scenario-unknown-key.yaml --no-report
            STDERR "scenario-unknown-key.yaml:6: workload.training: unknown key 'tensor_parallel'")
