# A profile is data with a source: the same command on the same files writes the same bytes.
# -DBIN=<clustertwin> -DINPUT=<measurements> -DWORKDIR=<dir>
foreach(run a b)
  set(p ${WORKDIR}/calibrate_rerun_${run}.yaml)
  file(REMOVE ${p})
  execute_process(COMMAND ${BIN} -q calibrate --cluster hgx-h100*1 --stack rerun ${INPUT}
                          --out ${p}
                  WORKING_DIRECTORY ${WORKDIR} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "calibrate failed (${rc}):\n${out}\n${err}")
  endif()
  file(READ ${p} text_${run})
endforeach()
if(NOT text_a STREQUAL text_b)
  message(FATAL_ERROR "two runs wrote different profiles:\n${text_a}\n---\n${text_b}")
endif()
string(FIND "${text_a}" "format: aiconfigurator-nccl, records: 11" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the profile does not record its input:\n${text_a}")
endif()
