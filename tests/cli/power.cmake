# `clustertwin power`: bad input exits 2 with a message naming the limit; a small run works and
# writes JSON with the documented unit keys and a valid trace (docs/models/power.md).
set(POWER_JOB --cluster gb300-nvl72*2 --model llama3.1-8b --tp 2 --pp 2 --global-batch 288 --seq-len 4096
    --comm analytical)
ct_cli_test(NAME power.cap_below_minimum RC 2 ARGS power ${POWER_JOB} --power-cap 100W
            STDERR "power cap 100 W is outside the settable range of gb300 (250-1400 W)")
ct_cli_test(NAME power.cap_above_maximum RC 2 ARGS power ${POWER_JOB} --power-cap 1.5kW
            STDERR "outside the settable range of gb300")
ct_cli_test(NAME power.zero_ramp RC 2 ARGS power ${POWER_JOB} --smoothing floor=0.8,ramp-up=0
            STDERR "ramp-up=0 W/s: a ramp limit must be > 0")
ct_cli_test(NAME power.zero_ramp_down RC 2 ARGS power ${POWER_JOB} --smoothing ramp-down=0
            STDERR "ramp-down=0 W/s: a ramp limit must be > 0")
ct_cli_test(NAME power.supply_temperature_below_range RC 2 ARGS power ${POWER_JOB} --supply-temp 10
            STDERR "--supply-temp 10 C is outside the pg25 supply range 15-45 C")
ct_cli_test(NAME power.floor_out_of_range RC 2 ARGS power ${POWER_JOB} --smoothing floor=0.95
            STDERR "expected 0 (off) or a fraction of TDP in 0.2-0.9")
ct_cli_test(NAME power.unknown_smoothing_key RC 2 ARGS power ${POWER_JOB} --smoothing flor=0.8
            STDERR "unknown key 'flor' (did you mean 'floor'")
ct_cli_test(NAME power.pue_below_one RC 2 ARGS power ${POWER_JOB} --pue 0.95 STDERR "--pue: expected a number in [1, 5], got 0.95")
ct_cli_test(NAME power.supply_temperature_out_of_range RC 2 ARGS power ${POWER_JOB} --supply-temp 60
            STDERR "--supply-temp 60 C is outside the pg25 supply range 15-45 C")
ct_cli_test(NAME power.clock_out_of_range RC 2 ARGS power ${POWER_JOB} --clock-lock 3GHz
            STDERR "clock lock 3000 MHz is outside")
ct_cli_test(NAME power.no_smoothing_on_hopper RC 2
            ARGS power --cluster hgx-h100*8 --model llama3.1-8b --tp 8 --pp 1 --comm analytical --smoothing on
            STDERR "has no power smoothing")
ct_cli_test(NAME power.runs RC 0 ARGS power ${POWER_JOB} --power-cap 1200W --tokens 1T --price 0.08
            --grid-intensity 400 --duration 60 --json power.json --trace power-trace.json
            STDOUT "coolant flow per rack")
ct_cli_test(NAME power.checkpoint_period_too_short RC 2 ARGS power ${POWER_JOB} --checkpoint-every 5 --checkpoint-time 10
            STDERR "more than the checkpoint pause")

# `clustertwin serve --power`: the power of a serving run (docs/models/power.md §6).
set(SERVE_POWER_JOB serve --cluster hgx-h200*1 --model llama3.1-8b --scenario offline --tp 1 --precision fp8
    --isl 1024 --osl 128)
ct_cli_test(NAME power.serve_runs RC 0 ARGS ${SERVE_POWER_JOB} --power --json serve-power.json
            STDOUT "energy per output token: IT / facility")
# Decode batches of 16 draw ~350 W (their hungriest kernel ~450 W): a 600 W cap slows the
# compute-bound prompt chunks and not decode.
ct_cli_test(NAME power.serve_cap_slows_prompts_not_decode RC 0 ARGS ${SERVE_POWER_JOB} --max-batch 16 --power
            --power-cap 600W STDOUT "decode kernels 0.0%")
ct_cli_test(NAME power.serve_cap_needs_power RC 2 ARGS ${SERVE_POWER_JOB} --power-cap 600W
            STDERR "--power-cap goes with --power")
ct_cli_test(NAME power.serve_cap_below_minimum RC 2 ARGS ${SERVE_POWER_JOB} --power --power-cap 50W
            STDERR "power cap 50 W is outside the settable range of h200 (200-700 W)")
# The settings `clustertwin power` takes, on a serving run: a clock lock (fed back like a cap), a
# given PUE, the coolant; and their bad input.
ct_cli_test(NAME power.serve_clock_lock RC 0 ARGS ${SERVE_POWER_JOB} --power --clock-lock 1500MHz
            STDOUT "clock locked at 1500 MHz")
ct_cli_test(NAME power.serve_given_pue_and_coolant RC 0
            ARGS ${SERVE_POWER_JOB} --power --pue 1.3 --coolant water --supply-temp 30
            STDOUT "1.300 (given)")
ct_cli_test(NAME power.serve_pue_below_one RC 2 ARGS ${SERVE_POWER_JOB} --power --pue 0.9
            STDERR "--pue: expected a number in [1, 5], got 0.9")
ct_cli_test(NAME power.serve_supply_temp_out_of_range RC 2 ARGS ${SERVE_POWER_JOB} --power --supply-temp 90
            STDERR "outside the pg25 supply range 15-45 C")
ct_cli_test(NAME power.serve_clock_lock_below_range RC 2 ARGS ${SERVE_POWER_JOB} --power --clock-lock 100MHz
            STDERR "clock lock 100 MHz is outside 396-1980 MHz for h200")
ct_cli_test(NAME power.serve_facility_flags_need_power RC 2 ARGS ${SERVE_POWER_JOB} --supply-temp 30
            STDERR "--supply-temp goes with --power")
# Smoothing of a serving rack: shown where the system has it, refused where it does not.
ct_cli_test(NAME power.serve_smoothing_on_gb300 RC 0
            ARGS serve --cluster gb300-nvl72*1 --model llama3.1-8b --scenario offline --tp 1
                 --precision fp4 --isl 1024 --osl 128 --power --smoothing floor=0.3,average=10s
            STDOUT "rack (instances), smoothed")
ct_cli_test(NAME power.serve_smoothing_refused_on_h200 RC 2 ARGS ${SERVE_POWER_JOB} --power --smoothing on
            STDERR "has no power smoothing")
ct_cli_test(NAME power.serve_smoothing_and_no_smoothing RC 2
            ARGS ${SERVE_POWER_JOB} --power --smoothing on --no-smoothing
            STDERR "--smoothing and --no-smoothing exclude each other")

# Done-when of issue 7: `clustertwin power` on the flagship cluster training a large model shows
# the rack and cluster waveform with and without smoothing, energy per step and per token,
# coolant flow per rack and PUE. Pinned whole (a reviewer reads the diff).
ct_cli_test(NAME golden.power_flagship ARGS power --tp 8 --pp 16 --comm analytical --duration 60
            GOLDEN scenarios/golden/power-flagship.txt LABELS golden)
