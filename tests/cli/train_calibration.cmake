# `train --calibration` and a scenario's `calibration:` run the same profile: the DP all-reduce
# across the two nodes slows down by what the A3 Mega fit says of its network, the note names
# the profile, and the scenario (profile path relative to the scenario file) gives the same
# step as the flag.
#   -DBIN=<clustertwin> -DPROFILE=<profile.yaml> -DSCENARIO=<scenario.yaml> -DWORKDIR=<dir>
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)

set(args train --cluster hgx-h100*2 --model llama3.1-8b --tp 8 --json -)
ct_run(plain 0 ${args})
ct_run(fitted 0 ${args} --calibration ${PROFILE})
ct_run(scenario 0 run ${SCENARIO} --json - --no-report)

string(JSON plain_step GET "${plain}" training step_time_s)
string(JSON plain_dp GET "${plain}" training breakdown_s dp_comm_exposed)
string(JSON fitted_step GET "${fitted}" training step_time_s)
string(JSON fitted_dp GET "${fitted}" training breakdown_s dp_comm_exposed)
string(JSON scenario_step GET "${scenario}" training step_time_s)
string(JSON notes GET "${fitted}" training notes)
message(STATUS "step ${plain_step} s -> ${fitted_step} s (scenario ${scenario_step} s); "
               "exposed DP comm ${plain_dp} s -> ${fitted_dp} s")

# The A3 Mega network reaches ~46% of the catalog's NIC efficiency with ~20x its latency: the
# exposed DP all-reduce across the nodes grows (it doubles), and the step with it. if() compares
# reals.
if(NOT fitted_dp GREATER plain_dp OR NOT fitted_step GREATER plain_step)
  message(FATAL_ERROR "the profile did not slow the DP all-reduce and the step: ${plain_dp} -> "
                      "${fitted_dp} s, ${plain_step} -> ${fitted_step} s")
endif()
if(NOT scenario_step STREQUAL fitted_step)
  message(FATAL_ERROR "scenario calibration: step ${scenario_step} s, the flag gives ${fitted_step} s")
endif()
string(FIND "${notes}" "calibration profile" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the notes do not name the profile: ${notes}")
endif()
