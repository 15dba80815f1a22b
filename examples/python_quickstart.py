# %% [markdown]
# # clustertwin from Python
#
# A notebook-style walk through the Python module: each `# %%` is a cell (Jupyter, VS Code and
# Spyder read them as such); `python3 examples/python_quickstart.py` runs them all. After
# `tools/quickstart.sh`, `import clustertwin` works from any directory (README.md, "Quick start").
#
# The module takes the same requests as the CLI and the scenario files: keyword arguments are the
# keys of a scenario file's `workload.training` / `workload.inference` (...) block, with the same
# defaults and checks; results are the dicts the verbs' `--json` writes.

# %%
import clustertwin

fields = clustertwin.training_fields()
print(len(fields), "training keywords; seq_len:", fields["seq_len"]["help"])

# %% [markdown]
# ## One training step
# Llama 3.1 8B on two HGX H100 nodes (16 GPUs), tensor parallel within a node.

# %%
step = clustertwin.train(cluster="hgx-h100*2", model="llama3.1-8b", tp=8, global_batch=64,
                         seq_len=4096)
t = step["training"]
print(f"step {t['step_time_s']:.3f} s, {t['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU, "
      f"MFU {t['mfu']:.1%}")

# %% [markdown]
# ## A small study: step time against the tensor-parallel size
# Plain Python loops over the keyword arguments; each call is one request.

# %%
for tp in (1, 2, 4, 8):
    t = clustertwin.train(cluster="hgx-h100*2", model="llama3.1-8b", tp=tp, global_batch=64,
                          seq_len=4096)["training"]
    print(f"tp={tp}: step {t['step_time_s']:.3f} s, MFU {t['mfu']:.1%}")

# %% [markdown]
# ## Serving: the best layout for one node
# `serving="auto"` searches tensor/expert-parallel layouts and batch limits, as `serve --serving
# auto` does; the result names the layout it chose.

# %%
best = clustertwin.serve(cluster="hgx-h100*1", model="llama3.1-8b", serving="auto", isl=1024,
                         osl=256, scenario="offline", precision="fp8")
s = best["inference"]
print(f"{s['layout']['summary']}: {s['tokens_per_s_per_gpu']:,.0f} tokens/s per GPU")

# %% [markdown]
# ## A month of that job under failures, and its power
# `goodput` and `power` take the training keywords plus their study's own
# (`goodput_fields()`, `power_fields()`); `schedule` a whole cluster's job stream
# (`schedule_fields()`).

# %%
g = clustertwin.goodput(cluster="gb300-nvl72*8", gpus=256, model="llama3.1-70b", tp=8, pp=4,
                        days=30, spares=2, sweep=False)["goodput"]
print(f"ETTR {g['ettr_breakdown']['ettr']:.1%} over {g['horizon_s'] / 86400:.0f} days, "
      f"{g['interruptions']} interruptions")
p = clustertwin.power(cluster="hgx-h100*2", model="llama3.1-8b", tp=8, power_cap="600W")["power"]
print(f"rack peak {p['rack_peak_W'] / 1e3:.1f} kW, {p['energy_per_token_J']:.3f} J per token")

# %% [markdown]
# ## Bad input
# Errors are `clustertwin.Error` (a `ValueError`) with the CLI's message, fields named by their
# keywords.

# %%
try:
    clustertwin.train(cluster="hgx-h100*1", model="llama3.1-406b")
except clustertwin.Error as e:
    print("clustertwin.Error:", e)
