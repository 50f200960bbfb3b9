#!/usr/bin/python3
"""End-to-end tests of the divergence finder (tools/divergence.py) and of the corpus test's
verdicts (tests/corpus_vs_ort.py) on a small chain model, with the real opscope and ONNX Runtime.
To make opscope "wrong" on purpose, both are pointed at a wrapper that runs opscope and then adds
1 to the saved values named in PERTURB: the finder must name the node that produced the first of
them in topological order, and the corpus test must fail; without a perturbation both agree.

    /usr/bin/python3 tests/corpus_e2e_test.py OPSCOPE_BINARY
Exit 77 (skip) when onnxruntime-node is missing and cannot be installed."""
import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FINDER = os.path.join(ROOT, "tools", "divergence.py")
OPSCOPE = None

WRAPPER = """#!/usr/bin/python3
import os, subprocess, sys
sys.path.insert(0, {tools!r})
from onnx import TensorProto, numpy_helper
if os.environ.get("CRASH"):
    os.kill(os.getpid(), 11)
rc = subprocess.run([{opscope!r}] + sys.argv[1:]).returncode
out = sys.argv[sys.argv.index("--save-outputs") + 1] if rc == 0 and "profile" in sys.argv else ""
for f in os.listdir(out) if out else []:
    t = TensorProto()
    t.ParseFromString(open(os.path.join(out, f), "rb").read())
    if t.name in os.environ.get("PERTURB", "").split(","):
        a = numpy_helper.to_array(t) + 1
        open(os.path.join(out, f), "wb").write(numpy_helper.from_array(a, t.name)
                                                .SerializeToString())
sys.exit(rc)
"""


def perturbing_opscope(directory):
    path = os.path.join(directory, "opscope_perturbed")
    with open(path, "w") as f:
        f.write(WRAPPER.format(tools=os.path.join(ROOT, "tools"), opscope=OPSCOPE))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def chain_model(path):
    """x -> Relu -> Mul(w) -> Add(b) -> Sigmoid -> y, with dynamic batch."""
    w = numpy_helper.from_array(np.full((1, 8), 0.5, np.float32), "w")
    b = numpy_helper.from_array(np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8), "b")
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "w"], ["m"], name="scale"),
             helper.make_node("Add", ["m", "b"], ["s"], name="shift"),
             helper.make_node("Sigmoid", ["s"], ["y"], name="squash")]
    g = helper.make_graph(nodes, "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])],
                          [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


class DivergenceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.dir.name, "chain.onnx")
        chain_model(cls.model)
        cls.wrapper = perturbing_opscope(cls.dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def find(self, perturb, *extra):
        env = dict(os.environ, PERTURB=perturb)
        return subprocess.run([sys.executable, FINDER, self.model, "--inputs", "x=2x8",
                               "--opscope", self.wrapper, *extra],
                              capture_output=True, text=True, env=env)

    def test_agreeing_engines_report_no_divergence(self):
        p = self.find("")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("no divergence among 4 compared values", p.stdout)

    def test_names_the_node_that_produced_the_first_bad_value(self):
        p = self.find("s,m")  # two wrong values: the earlier one in topological order counts
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("first divergence: node #1 'scale' (Mul), output 'm'", p.stdout)
        self.assertIn("input  'r': shape [2, 8]", p.stdout)
        self.assertIn("input  'w': shape [1, 8]", p.stdout)
        self.assertIn("output 'm': ORT shape [2, 8], opscope shape [2, 8]", p.stdout)

    def test_batches_find_the_same_node(self):
        p = self.find("y,s", "--batch", "1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("first divergence: node #2 'shift' (Add), output 's'", p.stdout)

    def test_a_refused_model_is_reported(self):
        p = subprocess.run([sys.executable, FINDER, self.model, "--inputs", "x=2x8",
                            "--opscope", "/bin/false"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)
        self.assertIn("opscope could not run the model (exit 1)", p.stdout)

    def test_dynamic_input_without_a_shape_is_a_usage_error(self):
        p = subprocess.run([sys.executable, FINDER, self.model, "--opscope", OPSCOPE],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("input 'x' has dynamic dims", p.stderr)


class CorpusVerdictTest(unittest.TestCase):
    """tests/corpus_vs_ort.py on a one-model manifest: PASS, FAIL on a wrong value, FAIL on a
    crash, UNSUPPORTED on a refusal."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        models = os.path.join(cls.dir.name, "models")
        os.mkdir(models)
        chain_model(os.path.join(models, "chain.onnx"))
        with open(os.path.join(models, "chain.onnx"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        cls.manifest = os.path.join(cls.dir.name, "MANIFEST.tsv")
        with open(cls.manifest, "w") as f:
            f.write("id\tpackage\tversion\tlicence\tpath\tsha256\texporter\topset\twhat\tinputs\n")
            f.write(f"chain\tnone\t0\tnone\tchain.onnx\t{digest}\ttest\t13\tchain\tx=3x8\n")
        cls.models = models
        cls.wrapper = perturbing_opscope(cls.dir.name)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def corpus(self, opscope, **env):
        md = os.path.join(self.dir.name, "results.md")
        p = subprocess.run([sys.executable, os.path.join(HERE, "corpus_vs_ort.py"),
                            "--manifest", self.manifest, "--models", self.models,
                            "--opscope", opscope, "--markdown", md],
                           capture_output=True, text=True, env=dict(os.environ, **env))
        text = ""
        if os.path.exists(md):
            with open(md) as f:
                text = f.read()
        return p.returncode, p.stdout, text

    def test_agreement_passes(self):
        rc, out, md = self.corpus(self.wrapper, PERTURB="")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"chain +PASS +1 output\(s\) agree")
        self.assertIn("| chain | test | 13 | PASS |", md)

    def test_a_wrong_output_fails_naming_it(self):
        rc, out, _ = self.corpus(self.wrapper, PERTURB="y")
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"chain +FAIL +output 'y': rel_l2=")
        self.assertIn("corpus: 1 fail", out)

    def test_a_crash_fails(self):
        rc, out, _ = self.corpus(self.wrapper, CRASH="1")
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"chain +FAIL +opscope crashed \(signal 11\)")

    def test_a_refusal_is_listed_not_failed(self):
        rc, out, _ = self.corpus("/bin/false")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"chain +UNSUPPORTED")
        self.assertIn("corpus: 1 unsupported", out)


if __name__ == "__main__":
    OPSCOPE = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, HERE)
    from corpus_vs_ort import ensure_ort
    why = ensure_ort()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main()
