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
ct_cli_test(NAME golden.plain_clustertwin ARGS --no-report GOLDEN scenarios/golden/flagship.txt LABELS golden)
