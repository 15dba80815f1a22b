# `clustertwin calibrate`: the round trip a user with nccl-tests logs runs (fit, then
# `collective --calibration`), the built-in profiles by name, and bad input (exit 2 with
# file:line). Included from tests/CMakeLists.txt.
set(CAL_DATA ${CMAKE_CURRENT_SOURCE_DIR}/validation/data/calibration)

# Fit the real 2 x 8 H100 all_reduce_perf run, write the profile, and check that `collective
# --calibration` reproduces the fitted curve and that the fit follows the measurements.
add_test(NAME cli.calibrate_then_collective_reproduces_the_curve
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DLOG=${CAL_DATA}/h100_2x8_all_reduce.txt -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_roundtrip.cmake)
set_tests_properties(cli.calibrate_then_collective_reproduces_the_curve PROPERTIES LABELS cli
                     TIMEOUT 900)

# Byte-identical when rerun (AIConfigurator's H100 all_gather rows, 2 GPUs of one node).
add_test(NAME cli.calibrate_profile_is_byte_identical_when_rerun
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DINPUT=${CAL_DATA}/aic_h100_nccl_excerpt.csv -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_rerun.cmake)
set_tests_properties(cli.calibrate_profile_is_byte_identical_when_rerun PROPERTIES LABELS cli
                     TIMEOUT 900)

ct_cli_test(NAME cli.calibrate_lists_builtin_profiles ARGS calibrate --list
            STDOUT "  h100  GPUs: h100, h800")
ct_cli_test(NAME cli.calibrate_lists_the_profiles_serving_constants ARGS calibrate --list
            STDOUT "      serving: tp_overlap ")
ct_cli_test(NAME cli.collective_builtin_profile_by_name
            ARGS collective --cluster hgx-h100*1 --calibration h100 --min-bytes 1M --max-bytes 1M
            STDOUT "calibration profile h100")
ct_cli_test(NAME bad.calibrate_more_ranks_than_gpus RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/h100_2x8_all_reduce.txt
            STDERR "h100_2x8_all_reduce.txt:3: the log has 16 ranks on 2 hosts but cluster hgx-h100*1 has 8 GPUs")
ct_cli_test(NAME bad.calibrate_wrong_gpu RC 2
            ARGS calibrate --cluster hgx-b200*2 ${CAL_DATA}/h100_2x8_all_reduce.txt
            STDERR "the log ran on 'NVIDIA H100 80GB HBM3' but the cluster's GPU is b200")
ct_cli_test(NAME bad.calibrate_foreign_file RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/README.md
            STDERR "README.md:1: not a measurement file calibrate reads")
ct_cli_test(NAME bad.calibrate_truncated_log RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/a100_sendrecv_excerpt.txt
            STDERR "a100_sendrecv_excerpt.txt:9: nccl-tests output ends after the row for 1073741824 B")
ct_cli_test(NAME bad.calibrate_kernel_tables_without_bf16_gemm RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/gemm_fp8.csv
            STDERR "no bf16 GEMM table (gemm_bfloat16.csv) was fitted")
ct_cli_test(NAME bad.calibrate_kernel_tables_with_nccl_logs RC 2
            ARGS calibrate --cluster hgx-h100*2 ${CAL_DATA}/aic_h100_gemm_bfloat16_excerpt.csv
                 ${CAL_DATA}/h100_2x8_all_reduce.txt
            STDERR "kernel tables make a compute calibration file of their own")
ct_cli_test(NAME bad.calibrate_builtin_without_reference RC 2
            ARGS calibrate --builtin compute
            STDERR "--builtin compute: give --reference DIR")

# Kernel tables -> a compute calibration file, byte-identical when rerun.
add_test(NAME cli.calibrate_kernel_tables
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DTABLE=${CAL_DATA}/aic_h100_gemm_bfloat16_excerpt.csv
                 -DSPEC=${CAL_DATA}/aic_h100_sxm_spec.yaml -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_kernels.cmake)
set_tests_properties(cli.calibrate_kernel_tables PROPERTIES LABELS cli)
# The built-in compute calibration is what `calibrate --builtin compute` writes (skipped without
# ../shared/reference, which holds the measured tables).
add_test(NAME cli.calibrate_builtin_compute_reproduces_the_catalog
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_builtin_compute.sh
                 $<TARGET_FILE:clustertwin> ${PROJECT_SOURCE_DIR}
                 ${PROJECT_SOURCE_DIR}/../shared/reference
                 ${CMAKE_CURRENT_BINARY_DIR}/calibrate-builtin-compute)
set_tests_properties(cli.calibrate_builtin_compute_reproduces_the_catalog PROPERTIES LABELS cli
                     TIMEOUT 900 SKIP_RETURN_CODE 77)
# Release-type builds only: under ASan the H100 fit (Nelder-Mead stage included) runs far past
# the timeout; the release build takes about 20 s.
if(NOT CT_SANITIZE)
add_test(NAME cli.calibrate_builtin_collectives_reproduces_the_h100_file
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_builtin_collectives.sh
                 $<TARGET_FILE:clustertwin> ${PROJECT_SOURCE_DIR}
                 ${PROJECT_SOURCE_DIR}/../shared/reference
                 ${CMAKE_CURRENT_BINARY_DIR}/calibrate-builtin-collectives)
set_tests_properties(cli.calibrate_builtin_collectives_reproduces_the_h100_file PROPERTIES LABELS cli
                     TIMEOUT 900 SKIP_RETURN_CODE 77)
# The at-scale figures: about 55 s of CPU in the release build (one fit per source group, then
# each source left out); under ASan several times that.
add_test(NAME cli.calibrate_builtin_at_scale_reproduces_the_catalog
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_builtin_at_scale.sh
                 $<TARGET_FILE:clustertwin> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/calibrate-builtin-at-scale)
set_tests_properties(cli.calibrate_builtin_at_scale_reproduces_the_catalog PROPERTIES LABELS cli
                     TIMEOUT 900)
# The training step constants: about 30 s of CPU in the release build (58 cases, one fit, then
# each source that sees a constant left out); under ASan several times that.
add_test(NAME cli.calibrate_builtin_training_reproduces_the_catalog
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_builtin_training.sh
                 $<TARGET_FILE:clustertwin> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/calibrate-builtin-training)
set_tests_properties(cli.calibrate_builtin_training_reproduces_the_catalog PROPERTIES LABELS cli
                     TIMEOUT 900)
endif()
ct_cli_test(NAME bad.calibrate_builtin_training_with_reference RC 2
            ARGS calibrate --builtin training --reference ${CMAKE_CURRENT_SOURCE_DIR}
            STDERR "--builtin training: takes no --reference")
# The serving step constants: a few dozen replays of two MLPerf server runs and one step-model
# iteration (release build: see docs/models/calibration.md); under ASan far longer.
if(NOT CT_SANITIZE)
add_test(NAME cli.calibrate_builtin_serving_reproduces_the_catalog
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_builtin_serving.sh
                 $<TARGET_FILE:clustertwin> ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/calibrate-builtin-serving)
set_tests_properties(cli.calibrate_builtin_serving_reproduces_the_catalog PROPERTIES LABELS cli
                     TIMEOUT 1800)
endif()
ct_cli_test(NAME bad.calibrate_builtin_serving_with_reference RC 2
            ARGS calibrate --builtin serving --reference ${CMAKE_CURRENT_SOURCE_DIR}
            STDERR "--builtin serving: takes no --reference")
ct_cli_test(NAME bad.calibrate_builtin_at_scale_without_cases RC 2
            ARGS calibrate --builtin at-scale --reference ${CMAKE_CURRENT_SOURCE_DIR}
            STDERR "at_scale.csv: cannot read file")
ct_cli_test(NAME bad.calibrate_builtin_collectives_unknown_file RC 2
            ARGS calibrate --builtin collectives --only h900 --reference ${CMAKE_CURRENT_SOURCE_DIR}
            STDERR "--builtin collectives: no file 'h900' in the recipe (expected one of h100, h200, b200, b300, gb200, gb300)")
ct_cli_test(NAME bad.calibrate_missing_file RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/nope.txt
            STDERR "nope.txt: cannot read file")
ct_cli_test(NAME bad.collective_calibration_unknown RC 2
            ARGS collective --cluster hgx-h100*1 --calibration nope.yaml
            STDERR "--calibration: 'nope.yaml' is neither a readable profile file nor a built-in profile (b200, b300")
ct_cli_test(NAME bad.collective_calibration_other_gpu RC 2
            ARGS collective --cluster hgx-b200*1 --calibration h100
            STDERR "--calibration h100 is for GPUs h100, h800; this cluster's GPU is b200")

# The other verbs that run the collective model take the same profiles (train, power, scenario
# files' `calibration:`, relative to the scenario file).
add_test(NAME cli.train_and_scenario_run_a_calibration_profile
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DPROFILE=${CAL_DATA}/a3mega_h100_profile.yaml
                 -DSCENARIO=${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrated/train.yaml
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/train_calibration.cmake)
set_tests_properties(cli.train_and_scenario_run_a_calibration_profile PROPERTIES LABELS cli)
ct_cli_test(NAME cli.power_takes_a_builtin_profile
            ARGS power --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --pp 1 --calibration h100
            STDOUT "average over the step")
ct_cli_test(NAME bad.train_calibration_other_gpu RC 2
            ARGS train --cluster hgx-b200*1 --model llama3.1-8b --tp 8 --calibration h100
            STDERR "--calibration h100 is for GPUs h100, h800; this cluster's GPU is b200")
ct_cli_test(NAME bad.train_calibration_with_analytical_comm RC 2
            ARGS train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --comm analytical
                 --calibration h100
            STDERR "--calibration: a calibration profile sets the collective model's lines, which the analytical communication model does not use")
ct_cli_test(NAME bad.scenario_calibration_missing RC 2
            ARGS run ${CMAKE_CURRENT_SOURCE_DIR}/cli/bad/scenario-calibration-missing.yaml --no-report
            STDERR "scenario-calibration-missing.yaml:7: calibration: '${CMAKE_CURRENT_SOURCE_DIR}/cli/bad/no-such-profile.yaml' is neither a readable profile file nor a built-in profile")
ct_cli_test(NAME bad.scenario_calibration_on_serving RC 2
            ARGS run ${CMAKE_CURRENT_SOURCE_DIR}/cli/bad/scenario-calibration-serving.yaml --no-report
            STDERR "scenario-calibration-serving.yaml:6: calibration b200 is for GPUs b200; this cluster's GPU is h100")

# Serving results: the round trip through the CLI (generated by `serve --calibration` with known
# constants), then `serve --calibration` with the fitted profile.
add_test(NAME cli.calibrate_serving_then_serve
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin> -DDATA=${CAL_DATA}
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_serving.cmake)
set_tests_properties(cli.calibrate_serving_then_serve PROPERTIES LABELS cli TIMEOUT 900)
ct_cli_test(NAME bad.calibrate_serving_without_setup RC 2
            ARGS calibrate --cluster hgx-h100*1 ${CAL_DATA}/serving_roundtrip_vllm.jsonl
            STDERR "serving results need the setup they ran under: give a scenario file with workload.inference")
# A profile's serving: mapping carries the serving step constants; a built-in profile the
# catalog's (the output unchanged), for its own GPUs only.
add_test(NAME cli.serve_profile_serving_constants
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/serving_profile_constants.cmake)
set_tests_properties(cli.serve_profile_serving_constants PROPERTIES LABELS cli TIMEOUT 900)
# The same mapping's eager issue time per layer runs in train and search (the training step's
# eager issue takes serving.yaml's figure); another GPU's profile is refused.
add_test(NAME cli.train_profile_eager_issue
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/training_profile_eager.cmake)
set_tests_properties(cli.train_profile_eager_issue PROPERTIES LABELS cli TIMEOUT 900)
ct_cli_test(NAME bad.serve_calibration_builtin_other_gpu RC 2
            ARGS serve --cluster hgx-b200*1 --gpus 1 --model llama3.1-8b --tp 1 --isl 64 --osl 8 --scenario offline
                 --calibration h100
            STDERR "--calibration h100 is for GPUs h100, h800; this cluster's GPU is b200")
ct_cli_test(NAME bad.serve_calibration_no_such_file RC 2
            ARGS serve --cluster hgx-h100*1 --gpus 1 --model llama3.1-8b --tp 1 --isl 64 --osl 8 --scenario offline
                 --calibration no-such-profile.yaml
            STDERR "--calibration: cannot read 'no-such-profile.yaml' (serving takes the name of a built-in profile")
ct_cli_test(NAME bad.serve_calibration_other_gpu RC 2
            ARGS serve --cluster hgx-b200*1 --gpus 1 --model llama3.1-8b --tp 1 --isl 64 --osl 8 --scenario offline
                 --calibration ${CAL_DATA}/serving_roundtrip_truth.yaml
            STDERR "serving_roundtrip_truth.yaml fitted the serving model on h100")
ct_cli_test(NAME bad.serve_calibration_without_serving_mapping RC 2
            ARGS serve --cluster hgx-h100*1 --gpus 1 --model llama3.1-8b --tp 1 --isl 64 --osl 8 --scenario offline
                 --calibration ${CAL_DATA}/a3mega_h100_profile.yaml
            STDERR "a3mega_h100_profile.yaml has no serving: or compute: mapping (it was fitted from collective or training measurements, which the serving step model does not read")

# Step times: fit the compute-time scale on the DGX H100 Llama 3.1 405B step, rerun
# byte-identical, train reproduces it, the held-out Llama 3 70B step within the stated band.
add_test(NAME cli.calibrate_step_times_then_train
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DFIT=${CAL_DATA}/dgx_h100_405b_step.csv -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -DHELD_MIN=9.21 -DHELD_MAX=11.25
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/calibrate_steps.cmake)
set_tests_properties(cli.calibrate_step_times_then_train PROPERTIES LABELS cli TIMEOUT 900)
ct_cli_test(NAME bad.calibrate_step_log_without_model RC 2
            ARGS calibrate --cluster hgx-h100*8 ${CAL_DATA}/megatron_format.log
            STDERR "megatron_format.log:15: the run names no model; give the catalog model with --train-model NAME")

# search and train read a profile's compute-time scale (tests/validation/data/calibration/
# dgx_h100_405b_profile.yaml, written by calibrate from dgx_h100_405b_step.csv).
add_test(NAME cli.search_runs_a_step_time_profile
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DPROFILE=${CAL_DATA}/dgx_h100_405b_profile.yaml
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/search_calibration.cmake)
set_tests_properties(cli.search_runs_a_step_time_profile PROPERTIES LABELS cli)
ct_cli_test(NAME bad.search_calibration_without_training RC 2
            ARGS search --cluster hgx-h100*1 --model llama3.1-8b --calibration
                 ${CAL_DATA}/a3mega_h100_profile.yaml
            STDERR "has no training: or compute: mapping")
ct_cli_test(NAME bad.train_step_profile_other_gpu RC 2
            ARGS train --cluster hgx-b200*1 --model llama3.1-8b --tp 8
                 --calibration ${CAL_DATA}/dgx_h100_405b_profile.yaml
            STDERR "dgx_h100_405b_profile.yaml fitted the training model on h100; this cluster's GPU is b200")
add_test(NAME cli.goodput_runs_a_step_time_profile
         COMMAND ${CMAKE_COMMAND} -DBIN=$<TARGET_FILE:clustertwin>
                 -DPROFILE=${CAL_DATA}/dgx_h100_405b_profile.yaml
                 -DWORKDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/cli/goodput_calibration.cmake)
set_tests_properties(cli.goodput_runs_a_step_time_profile PROPERTIES LABELS cli)
ct_cli_test(NAME bad.goodput_calibration_without_training RC 2
            ARGS goodput --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --pp 1 --calibration h100
            STDERR "--calibration: h100 has no training: or compute: mapping")
