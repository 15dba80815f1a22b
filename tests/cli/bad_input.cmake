# Bad input: a clear message naming what and where, exit code 2 (DESIGN.md §4).
set(BAD ${CMAKE_CURRENT_SOURCE_DIR}/cli/bad)
ct_cli_test(NAME bad.unknown_cluster RC 2 ARGS describe azure-ndv6-gb30
            STDERR "unknown cluster 'azure-ndv6-gb30' (did you mean 'azure-ndv6-gb300'")
ct_cli_test(NAME bad.unknown_system_shorthand RC 2 ARGS describe gb300-nvl27*8
            STDERR "unknown system 'gb300-nvl27' (did you mean 'gb300-nvl72'")
ct_cli_test(NAME bad.zero_count_shorthand RC 2 ARGS describe gb300-nvl72*0
            STDERR "expected SYSTEM*COUNT with COUNT >= 1, got '0'")
ct_cli_test(NAME bad.missing_file RC 2 ARGS describe ${BAD}/does-not-exist.yaml
            STDERR "cannot open file")
ct_cli_test(NAME bad.unknown_key RC 2 ARGS describe ${BAD}/unknown-key.yaml
            STDERR "unknown-key.yaml:5: cluster.scale_out: unknown key 'oversubscriptoin' (did you mean 'oversubscription'")
ct_cli_test(NAME bad.missing_key RC 2 ARGS describe ${BAD}/missing-key.yaml
            STDERR "missing-key.yaml:2: cluster: missing required key 'count'")
ct_cli_test(NAME bad.negative_count RC 2 ARGS describe ${BAD}/negative-count.yaml
            STDERR "negative-count.yaml:4: cluster.count: expected an integer in [1, 10000000], got -4")
ct_cli_test(NAME bad.wrong_unit RC 2 ARGS describe ${BAD}/wrong-unit.yaml
            STDERR "wrong-unit.yaml:9: cluster.scale_out.cable_latency: expected a time like '1.5 us', got '50 GB/s'")
ct_cli_test(NAME bad.fat_tree_too_small RC 2 ARGS describe ${BAD}/fat-tree-too-small.yaml
            STDERR "connect at most 10368 endpoints, the cluster has 14400 (use tiers: 3)")
ct_cli_test(NAME bad.nvlink_switch_as_fabric RC 2 ARGS describe ${BAD}/nvlink-fabric.yaml
            STDERR "is an NVLink switch; the scale-out fabric needs an InfiniBand or Ethernet switch")
ct_cli_test(NAME bad.yaml_syntax RC 2 ARGS describe ${BAD}/syntax.yaml STDERR "syntax.yaml:4: syntax error")
ct_cli_test(NAME bad.bad_oversubscription RC 2 ARGS describe ${BAD}/bad-oversub.yaml
            STDERR "expected a down:up ratio >= 1 such as '1:7' or '1', got '7:1'")
ct_cli_test(NAME bad.unknown_flag RC 2 ARGS describe --jsno - STDERR "jsno")
ct_cli_test(NAME bad.unknown_catalog_entry RC 2 ARGS catalog show gb3000
            STDERR "unknown name 'gb3000' (did you mean 'gb300'")
ct_cli_test(NAME bad.custom_catalog_broken RC 2 ARGS --catalog ${BAD}/catalog describe
            STDERR "rack-too-small.yaml")
