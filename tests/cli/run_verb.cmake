# The helper the -P scripts of tests/cli share (include it; they are given -DBIN and -DWORKDIR):
#   ct_run(<out_var> <rc_want> ARGS...)
# runs clustertwin with ARGS in WORKDIR and stops the test with both outputs unless it exits
# <rc_want>; <out_var> gets stdout and <out_var>_err stderr.
function(ct_run out_var rc_want)
  execute_process(COMMAND ${BIN} ${ARGN} WORKING_DIRECTORY ${WORKDIR}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 900)
  if(NOT rc EQUAL rc_want)
    message(FATAL_ERROR "clustertwin ${ARGN}: exit ${rc}, expected ${rc_want}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${out_var}_err "${err}" PARENT_SCOPE)
endfunction()
