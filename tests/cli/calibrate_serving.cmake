# `calibrate` on serving results (round trip through the CLI): vLLM benchmark_serving results
# that `serve --calibration` generated with a known kernel-time factor (1.25) and host time per
# iteration (2 ms), every figure x a fixed +-1% pattern (data README); the fit must give both
# back within the noise, rerun byte-identical, and `serve --calibration` with the fitted profile
# must reproduce a measured mean TPOT. docs/models/calibration.md.
#   -DBIN=<clustertwin> -DDATA=<tests/validation/data/calibration> -DWORKDIR=<dir>
set(profile ${WORKDIR}/calibrate_serving_profile.yaml)
include(${CMAKE_CURRENT_LIST_DIR}/run_verb.cmake)

file(REMOVE ${profile} ${WORKDIR}/calibrate_serving.html ${WORKDIR}/calibrate_serving.json)
ct_run(summary 0 calibrate --cluster hgx-h100*1 ${DATA}/serving_roundtrip_setup.yaml
       ${DATA}/serving_roundtrip_vllm.jsonl --out ${profile}
       --report ${WORKDIR}/calibrate_serving.html --json ${WORKDIR}/calibrate_serving.json)
message(STATUS "${summary}")
file(READ ${WORKDIR}/calibrate_serving.json json)
string(JSON factor GET "${json}" serving gpu_factor)
string(JSON host GET "${json}" serving host_s)
string(JSON rms GET "${json}" serving rms_log_error_after)
string(JSON host_constrained GET "${json}" serving parameters 1 constrained)
message(STATUS "fitted gpu_factor ${factor} (truth 1.25), host_s ${host} (truth 0.002), rms ${rms}")
if(factor LESS 1.2125 OR factor GREATER 1.2875)  # 3%
  message(FATAL_ERROR "gpu_factor ${factor}, expected 1.25 within 3%")
endif()
if(host LESS 0.0017 OR host GREATER 0.0023 OR NOT host_constrained)  # 15%
  message(FATAL_ERROR "host_s ${host} (constrained: ${host_constrained}), expected 0.002 within 15%")
endif()
if(rms GREATER 0.015)
  message(FATAL_ERROR "rms log error after the fit ${rms}: above the +-1% noise")
endif()
file(READ ${WORKDIR}/calibrate_serving.html page)
foreach(want "Serving results on h100" "serving.gpu_factor" "serving.host_s"
        "tpot_mean_ms (" "residual histogram" "<svg")
  string(FIND "${page}" "${want}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "the report lacks '${want}'")
  endif()
endforeach()
file(READ ${profile} first)
ct_run(again 0 calibrate --cluster hgx-h100*1 ${DATA}/serving_roundtrip_setup.yaml
       ${DATA}/serving_roundtrip_vllm.jsonl --out ${profile})
file(READ ${profile} second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "the profile differs when rerun")
endif()
# serve with the fitted profile: the 8 req/s run's mean TPOT, measured 10.19 ms.
ct_run(served 0 serve --cluster hgx-h100*1 --gpus 1 --model llama3.1-8b --tp 1 --isl 1024 --osl 256
       --precision fp8 --requests 300 --scenario server --rate 8 --ttft-limit "10 s"
       --tpot-limit "1 s" --calibration ${profile} --json -)
string(JSON tpot GET "${served}" inference tpot_s mean)
string(JSON notes GET "${served}" inference notes)
string(FIND "${notes}" "fitted to measured serving results" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "the notes do not name the serving calibration: ${notes}")
endif()
message(STATUS "serve --calibration: mean TPOT ${tpot} s at 8 req/s (measured 0.01019)")
if(tpot LESS 0.00988 OR tpot GREATER 0.01050)  # 3%
  message(FATAL_ERROR "mean TPOT ${tpot} s, measured 0.01019 s (3%)")
endif()
# A scenario file's workload.inference takes the profile as `calibration:` (relative to the
# scenario file) and runs the same TPOT.
file(WRITE ${WORKDIR}/calibrate_serving_scenario.yaml
"cluster: hgx-h100*1
workload:
  inference:
    model: llama3.1-8b
    gpus: 1
    tp: 1
    isl: 1024
    osl: 256
    precision: fp8
    requests: 300
    scenario: server
    rate: 8
    ttft_limit: 10 s
    tpot_limit: 1 s
    calibration: calibrate_serving_profile.yaml
")
ct_run(scenario 0 run ${WORKDIR}/calibrate_serving_scenario.yaml --no-report --json -)
string(JSON scenario_tpot GET "${scenario}" inference tpot_s mean)
if(NOT scenario_tpot EQUAL tpot)
  message(FATAL_ERROR "the scenario's TPOT p50 ${scenario_tpot} s differs from serve's ${tpot} s")
endif()
