# `clustertwin train --model <config.json>` for every Hugging Face architecture it reads (the
# config.json files in tests/models/hf/, attribution in its README.md): each must run a training
# step with a layout that fits; the parameter counts are checked in
# src/clustertwin/models/hf_config_test.cpp.
set(CT_HF ${CMAKE_SOURCE_DIR}/tests/models/hf)
function(ct_hf_train name folder)
  ct_cli_test(NAME cli.hf_train_${name} ARGS train --model ${CT_HF}/${folder}/config.json ${ARGN}
              STDOUT "${folder} on ")
endfunction()
ct_hf_train(qwen2 Qwen2.5-7B --cluster hgx-h100*1 --tp 2 --seq-len 4096 --global-batch 64)
ct_hf_train(qwen2_moe Qwen1.5-MoE-A2.7B --cluster hgx-h100*1 --ep 4 --seq-len 4096 --global-batch 64)
ct_hf_train(qwen3 Qwen3-8B --cluster hgx-h100*1 --tp 2 --seq-len 4096 --global-batch 64)
ct_hf_train(qwen3_moe Qwen3-235B-A22B --cluster hgx-h100*32 --tp 2 --pp 8 --ep 16 --vpp 4
            --seq-len 4096 --global-batch 2048 --recompute full)
ct_hf_train(gpt_oss gpt-oss-120b --cluster hgx-h100*8 --pp 4 --ep 8 --seq-len 4096
            --global-batch 512 --recompute full)
ct_hf_train(gemma2 gemma-2-9b --cluster hgx-h100*1 --tp 2 --seq-len 4096 --global-batch 64)
ct_hf_train(gemma3 gemma-3-1b-it --cluster hgx-h100*1 --seq-len 4096 --global-batch 64)
ct_hf_train(gemma3_multimodal gemma-3-27b-it --cluster hgx-h100*1 --tp 4 --pp 2 --seq-len 4096
            --global-batch 64 --recompute full)
ct_hf_train(llama4 Llama-4-Maverick-17B-128E-Instruct --cluster hgx-h100*64 --tp 4 --pp 4 --ep 32
            --seq-len 8192 --global-batch 256 --recompute full)
ct_hf_train(glm4_moe GLM-4.5 --cluster hgx-h100*32 --tp 2 --pp 4 --ep 32 --seq-len 4096
            --global-batch 1024 --recompute full)
ct_hf_train(phi3 Phi-3-mini-4k-instruct --cluster hgx-h100*1 --seq-len 4096 --global-batch 64)
ct_hf_train(kimi_k2 Kimi-K2-Instruct --cluster hgx-h800*256 --pp 16 --ep 64 --seq-len 4096
            --global-batch 4096 --recompute full --precision fp8)
# Serving reads the same files (local attention shortens the attention of GPT-OSS's sliding layers).
ct_cli_test(NAME cli.hf_model_show_gpt_oss ARGS model show ${CT_HF}/gpt-oss-120b/config.json
            STDOUT "local attention sliding window 128 on 18 of 36 layers")
# Another architecture: refused with the supported list and the fields a model YAML would need.
ct_cli_test(NAME bad.hf_unsupported_architecture RC 2
            ARGS train --cluster hgx-h100*1 --model ${CMAKE_SOURCE_DIR}/tests/cli/bad/hf-unsupported/config.json
            STDERR "unsupported architecture 'MambaForCausalLM' (supported: LlamaForCausalLM")
