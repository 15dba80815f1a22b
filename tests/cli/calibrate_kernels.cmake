# Kernel tables: a user's AIConfigurator GEMM table with its system spec becomes a compute
# calibration file (catalog/compute/<gpu>.yaml format) that cites the input by hash, the same
# bytes when rerun. -DBIN=<clustertwin> -DTABLE=<gemm csv> -DSPEC=<aic system yaml> -DWORKDIR=<dir>
foreach(run a b)
  set(p ${WORKDIR}/calibrate_kernels_${run}.yaml)
  file(REMOVE ${p})
  execute_process(COMMAND ${BIN} -q calibrate --cluster hgx-h100*1 --stack kernels ${TABLE} ${SPEC}
                          --out ${p}
                  WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out_${run} ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "calibrate failed (${rc}):\n${out_${run}}\n${err}")
  endif()
  file(READ ${p} text_${run})
endforeach()
if(NOT text_a STREQUAL text_b)
  message(FATAL_ERROR "two runs wrote different files:\n${text_a}\n---\n${text_b}")
endif()
file(SHA256 ${TABLE} hash)
foreach(want "gpu: h100" "bf16: {value: 989 TFLOP/s, source: spec}" "reference_hbm_bandwidth: {value: 3.35 TB/s"
        "unaligned_m_penalty: 1" "sha256:${hash}" "AIConfigurator system spec ${SPEC}"
        "        - \"m=1 n=128 | ")
  string(FIND "${text_a}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the compute file lacks '${want}':\n${text_a}")
  endif()
endforeach()
# The summary names the held-out error (n = 3072 rows are off the fitted power-of-two lines).
string(REGEX MATCH "gemm bf16 +t0 [0-9.]+ us, unaligned-m penalty [0-9.]+; fit rows: n=36 [^;]*; held out: n=28 median ([0-9.]+)%" m "${out_a}")
if(NOT m OR CMAKE_MATCH_1 GREATER 15)
  message(FATAL_ERROR "unexpected summary:\n${out_a}")
endif()

# The profile runs wherever the compute model runs: train, search, power, goodput and serve
# take it with --calibration and say which kernel tables ran; train's step moves with it; a
# cluster of another GPU refuses it, naming the flag.
set(p ${WORKDIR}/calibrate_kernels_a.yaml)
set(note "kernel efficiencies (gemm bf16) fitted to measured kernel tables (calibration profile ${p})")
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)
set(train_args train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --json -)
ct_run(plain 0 ${train_args})
ct_run(fitted 0 ${train_args} --calibration ${p})
string(JSON step_plain GET "${plain}" training step_time_s)
string(JSON step_fitted GET "${fitted}" training step_time_s)
string(FIND "${fitted}${fitted_err}" "${note}" pos)
if(pos EQUAL -1 OR step_plain EQUAL step_fitted)
  message(FATAL_ERROR "train did not run the profile's kernels (${step_plain} -> ${step_fitted} s):\n${fitted}${fitted_err}")
endif()
message(STATUS "train step ${step_plain} s -> ${step_fitted} s with the kernel profile")
# The closed-form communication model reads no collective lines, but the kernels run.
ct_run(out 0 train --cluster hgx-h100*1 --model llama3.1-8b --tp 8 --comm analytical --calibration ${p})
foreach(verb_args
        "search;--cluster;hgx-h100*1;--model;llama3.1-8b;--top;1"
        "power;--cluster;hgx-h100*1;--model;llama3.1-8b;--tp;8"
        "goodput;--cluster;hgx-h100*2;--model;llama3.1-8b;--tp;8;--days;1;--no-sweep"
        "serve;--cluster;hgx-h100*1;--gpus;1;--model;llama3.1-8b;--tp;1;--isl;256;--osl;32;--scenario;offline;--requests;600")
  ct_run(out 0 ${verb_args} --calibration ${p})
  list(GET verb_args 0 verb)
  if(NOT verb STREQUAL "power")
    string(FIND "${out}${out_err}" "fitted to measured kernel tables" pos)
    if(pos EQUAL -1)
      message(FATAL_ERROR "${verb} does not say the profile's kernels ran:\n${out}${out_err}")
    endif()
  endif()
endforeach()
ct_run(out 2 train --cluster hgx-b200*1 --model llama3.1-8b --tp 8 --calibration ${p})
string(FIND "${out}${out_err}" "--calibration ${p} fitted the compute model on h100; this cluster's GPU is b200" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "another GPU's cluster did not refuse the profile:\n${out}${out_err}")
endif()
