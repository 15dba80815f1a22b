"""Tests of the Python module against the CLI (issue 18 item 4): the same request through both
doors gives the same results JSON and the same error messages.

Run by ctest (python/CMakeLists.txt) with Debian's python3 and unittest:
  python3 python/clustertwin_test.py --cli build/dev/apps/clustertwin/clustertwin
with PYTHONPATH naming the folder of the built module (build/<preset>/python).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import unittest

import clustertwin

HERE = os.path.dirname(os.path.abspath(__file__))
FLAGSHIP = os.path.join(HERE, "..", "examples", "azure-ndv6-gb300.yaml")
CLI = "clustertwin"


def flagship_block(name):
    """The flagship scenario's `workload.<name>` block as keyword arguments (the file is plain
    `key: value` lines; Debian's python3 has no YAML reader in its standard library)."""
    out, inside = {}, False
    with open(FLAGSHIP, encoding="utf-8") as f:
        for line in f:
            if line.startswith("cluster:"):
                out["cluster"] = line.split(":", 1)[1].strip()
            elif re.match(r"^  \w+:\s*$", line):
                inside = line.strip() == name + ":"
            elif inside and re.match(r"^    \w+:", line):
                key, value = (s.strip() for s in line.split(":", 1))
                if value in ("true", "false"):
                    out[key] = value == "true"
                elif re.fullmatch(r"-?\d+", value):
                    out[key] = int(value)
                else:
                    out[key] = value
    return out


def cli_args(kwargs, fields):
    """The CLI flags for the same request: each keyword's flag from the field table."""
    args = []
    for key, value in kwargs.items():
        field = fields[key]
        if isinstance(value, bool):
            # A switch whose default is on is turned off by its flag (--no-sequence-parallel).
            if value != field["default"]:
                args.append(field["flag"])
        else:
            args += [field["flag"], str(value)]
    return args


def cli_env():
    """The environment without what ctest sets for loading a sanitized module into python3 (the
    CLI links its sanitizers itself, and keeps its leak check)."""
    env = dict(os.environ)
    for name in ("LD_PRELOAD", "ASAN_OPTIONS"):
        env.pop(name, None)
    return env


def run_cli(verb, args):
    return subprocess.run([CLI, verb, *args, "--json", "-"], capture_output=True, text=True,
                          check=False, env=cli_env())


def cli_message_in_keywords(stderr, fields):
    """The CLI's message with each flag written as its keyword, without the "error: " prefix."""
    text = stderr.strip()
    if text.startswith("error: "):
        text = text[len("error: "):]
    for key in sorted(fields, key=lambda k: -len(fields[k]["flag"])):
        text = re.sub(re.escape(fields[key]["flag"]) + r"(?![\w-])", key, text)
    return text


class Training(unittest.TestCase):
    def test_flagship_training_step_is_the_cli_json(self):
        kwargs = flagship_block("training")
        self.assertEqual(kwargs["model"], "megatron-gpt-1t")
        result = clustertwin.train(**kwargs)
        self.assertIsInstance(result, dict)
        cli = run_cli("train", cli_args(kwargs, clustertwin.training_fields()))
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(result, json.loads(cli.stdout))
        training = result["training"]
        self.assertGreater(training["step_time_s"], 0)
        self.assertEqual(training["gpus"], 4608)
        self.assertIn("power", result)

    def test_keywords_are_the_train_flags(self):
        fields = clustertwin.training_fields()
        helptext = subprocess.run([CLI, "train", "--help"], capture_output=True, text=True,
                                  check=True, env=cli_env()).stdout
        flags = set(re.findall(r"^\s+(--[a-z0-9-]+)", helptext, re.M))
        self.assertEqual({f["flag"] for f in fields.values()},
                         flags - {"--help", "--json", "--trace"})
        self.assertEqual(fields["tp"]["default"], 1)
        self.assertEqual(fields["precision"]["choices"], ["bf16", "fp8", "fp4"])


class Serving(unittest.TestCase):
    KWARGS = dict(cluster="hgx-h100*1", model="llama3.1-8b", serving="auto", isl=1024, osl=256,
                  scenario="offline", precision="fp8")

    def test_serving_search_is_the_cli_json(self):
        result = clustertwin.serve(**self.KWARGS)
        cli = run_cli("serve", cli_args(self.KWARGS, clustertwin.serving_fields()))
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(result, json.loads(cli.stdout))
        self.assertGreater(result["inference"]["tokens_per_s_per_gpu"], 0)


class Studies(unittest.TestCase):
    """goodput, power and schedule: the same keywords as their verbs' flags, the same JSON."""

    def assert_same_as_cli(self, verb, call, kwargs, fields):
        result = call(**kwargs)
        cli = run_cli(verb, cli_args(kwargs, fields))
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(result, json.loads(cli.stdout))
        return result

    def test_goodput_is_the_cli_json(self):
        kwargs = dict(cluster="gb300-nvl72*8", gpus=256, model="llama3.1-70b", tp=8, pp=4,
                      days=10, spares=2, failure_scale=10, sweep=False)
        result = self.assert_same_as_cli("goodput", clustertwin.goodput, kwargs,
                                         clustertwin.goodput_fields())
        self.assertGreater(result["goodput"]["ettr_breakdown"]["ettr"], 0)

    def test_power_is_the_cli_json(self):
        kwargs = dict(cluster="hgx-h100*2", model="llama3.1-8b", tp=8, power_cap="600W")
        result = self.assert_same_as_cli("power", clustertwin.power, kwargs,
                                         clustertwin.power_fields())
        self.assertIn("power", result)
        self.assertGreater(result["training"]["step_time_s"], 0)

    def test_schedule_is_the_cli_json(self):
        kwargs = dict(cluster="gb300-nvl72*2", synthetic="llm:jobs=200", days=1)
        result = self.assert_same_as_cli("schedule", clustertwin.schedule, kwargs,
                                         clustertwin.schedule_fields())
        self.assertEqual(len(result["schedule"]["runs"]), 1)

    def test_collective_is_the_cli_json(self):
        kwargs = dict(cluster="hgx-h100*2", op="all_gather", min_bytes="1M", max_bytes="64M")
        result = self.assert_same_as_cli("collective", clustertwin.collective, kwargs,
                                         clustertwin.collective_fields())
        self.assertEqual(len(result["results"]), 7)

    def test_study_keywords_are_the_verbs_flags(self):
        # Each verb's own outputs are flags, not keywords (schedule's --trace is its job trace, a
        # keyword).
        for verb, fields, outputs in (("goodput", clustertwin.goodput_fields(), {"--json"}),
                                      ("power", clustertwin.power_fields(), {"--json", "--trace"}),
                                      ("schedule", clustertwin.schedule_fields(),
                                       {"--json", "--jobs-csv"}),
                                      ("collective", clustertwin.collective_fields(),
                                       {"--json", "--format"})):
            with self.subTest(verb=verb):
                helptext = subprocess.run([CLI, verb, "--help"], capture_output=True, text=True,
                                          check=True, env=cli_env()).stdout
                # "-b,--min-bytes": a flag with a one-letter alias (collective's nccl-tests ones)
                flags = set(re.findall(r"^\s+(?:-[a-z],)?(--[a-z0-9-]+)", helptext, re.M))
                self.assertEqual({f["flag"] for f in fields.values()},
                                 flags - {"--help"} - outputs)

    def test_a_study_error_names_keywords(self):
        with self.assertRaises(clustertwin.Error) as caught:
            clustertwin.schedule(cluster="gb300-nvl72*2", synthetic="llm:jobz=3")
        self.assertIn("synthetic", str(caught.exception))
        self.assertNotIn("--", str(caught.exception))
        with self.assertRaises(clustertwin.Error) as caught:
            clustertwin.goodput(model="llama3.1-8b", dayz=3)
        self.assertIn("did you mean 'days'", str(caught.exception))


class Errors(unittest.TestCase):
    def assert_same_message(self, verb, kwargs, fields):
        call = clustertwin.train if verb == "train" else clustertwin.serve
        with self.assertRaises(clustertwin.Error) as caught:
            call(**kwargs)
        cli = run_cli(verb, cli_args(kwargs, fields))
        self.assertEqual(cli.returncode, 2, cli.stderr)
        self.assertEqual(str(caught.exception), cli_message_in_keywords(cli.stderr, fields))
        return str(caught.exception)

    def test_unknown_model_has_the_cli_message(self):
        message = self.assert_same_message("train", {"model": "llama3.1-406b"},
                                           clustertwin.training_fields())
        self.assertIn("llama3.1-405b", message)

    def test_a_layout_error_names_keywords_where_the_cli_names_flags(self):
        kwargs = {"cluster": "hgx-h100*1", "model": "llama3.1-8b", "tp": 3}
        message = self.assert_same_message("train", kwargs, clustertwin.training_fields())
        self.assertNotIn("--", message)

    def test_a_serving_error_has_the_cli_message(self):
        kwargs = {"cluster": "hgx-h100*1", "model": "llama3.1-8b", "tp": 8, "ep": 3}
        self.assert_same_message("serve", kwargs, clustertwin.serving_fields())

    def test_bad_keywords_and_types(self):
        cases = [
            ({"tpp": 8}, "unknown keyword 'tpp' (did you mean 'pp', 'tp' or 'vpp'?)"),
            ({"tp": "8"}, "tp: expected an integer, got str"),
            ({"tp": True}, "tp: expected an integer, got bool"),
            ({"tp": 0}, "tp: expected an integer in [1, 67108864], got 0"),
            ({"tp": 2**70}, "tp: expected an integer in [1, 67108864], got 1180591620717411303424"),
            ({"power": 1}, "power: expected True or False, got int"),
            ({"framework_overhead": "x"}, "framework_overhead: expected a number, got str"),
        ]
        for kwargs, expected in cases:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(clustertwin.Error) as caught:
                    clustertwin.train(**kwargs)
                self.assertTrue(str(caught.exception).startswith(expected),
                                str(caught.exception))
        self.assertTrue(issubclass(clustertwin.Error, ValueError))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cli", required=True, help="the clustertwin binary")
    args, rest = parser.parse_known_args()
    CLI = args.cli
    unittest.main(argv=[sys.argv[0], *rest])
