# The issue-16 user story as a test: nccl-tests log -> `clustertwin calibrate --out` ->
# `clustertwin collective --calibration` reproduces the fitted curve, and the fit follows the
# measurements. -DBIN=<clustertwin> -DLOG=<nccl-tests output> -DWORKDIR=<dir>
set(profile ${WORKDIR}/calibrate_roundtrip_profile.yaml)
set(fitjson ${WORKDIR}/calibrate_roundtrip_fit.json)
file(REMOVE ${profile} ${fitjson})
execute_process(COMMAND ${BIN} -q calibrate --cluster hgx-h100*2 --stack test ${LOG}
                        --folds 0 --model analytical --out ${profile} --json ${fitjson}
                WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "calibrate failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${fitjson} fit)
string(JSON after GET "${fit}" rms_log_error_after)
string(JSON before GET "${fit}" rms_log_error_before)
# The catalog's 400G InfiniBand H100 cluster is far from this 2-node run (Google Cloud A3 Mega:
# ~123 us latency floor, busbw 339 GB/s at 8 GiB): 140% rms log error before the fit. The fit
# must come within 30% (it reaches ~24%: the run's 4-64 MiB stretch, a protocol switch on that
# network, is more than the line model's min() of NCCL lines can follow) and cut the error by 4x.
execute_process(COMMAND awk "BEGIN { exit !(${after} < 0.30 && ${after} * 4 < ${before}) }"
                RESULT_VARIABLE fit_rc)
if(NOT fit_rc EQUAL 0)
  message(FATAL_ERROR "fit does not follow the measurements: rms log error ${before} -> ${after}\n${out}")
endif()
execute_process(COMMAND ${BIN} collective --cluster hgx-h100*2 --gpus 16 --min-bytes 8
                        --max-bytes 8G --calibration ${profile} --format csv --model analytical
                WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE csv ERROR_VARIABLE err
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "collective --calibration failed (${rc}):\n${err}")
endif()
# Row i of the CSV (after its header) is size 8 * 2^i; the fit's row i the same size.
string(REPLACE "\n" ";" lines "${csv}")
list(REMOVE_AT lines 0)
string(JSON nrows LENGTH "${fit}" rows)
math(EXPR last "${nrows} - 1")
foreach(i RANGE ${last})
  list(GET lines ${i} line)
  string(REPLACE "," ";" cells "${line}")
  list(GET cells 0 size)
  list(GET cells 5 time_us)
  string(JSON fsize GET "${fit}" rows ${i} size_bytes)
  string(JSON fitted GET "${fit}" rows ${i} after_us)
  if(NOT size EQUAL fsize)
    message(FATAL_ERROR "row ${i}: size ${size} in the collective table, ${fsize} in the fit")
  endif()
  # Profile figures carry 4 significant digits: agreement within 0.5%.
  execute_process(COMMAND awk "BEGIN { r = ${time_us} / ${fitted}; exit !(r > 0.995 && r < 1.005) }"
                  RESULT_VARIABLE awk_rc)
  if(NOT awk_rc EQUAL 0)
    message(FATAL_ERROR "size ${size}: collective --calibration gives ${time_us} us, the fit ${fitted} us")
  endif()
endforeach()
message(STATUS "calibrate round trip: rms log error ${before} -> ${after}; ${nrows} sizes reproduced")
