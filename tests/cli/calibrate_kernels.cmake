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
