#!/usr/bin/python3
"""End-to-end test of tools/divergence.py on a small chain model, with the real opscope and
ONNX Runtime. To make opscope "wrong" on purpose, the finder is pointed at a wrapper that runs
opscope and then adds 1 to one saved value (PERTURB): the finder must name the node that
produced it, not an earlier or later one, and report no divergence without the perturbation.

    /usr/bin/python3 tests/divergence_test.py OPSCOPE_BINARY
Exit 77 (skip) when onnxruntime-node is missing and cannot be installed."""
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
rc = subprocess.run([{opscope!r}] + sys.argv[1:]).returncode
out = sys.argv[sys.argv.index("--save-outputs") + 1]
for f in os.listdir(out) if rc == 0 else []:
    t = TensorProto()
    t.ParseFromString(open(os.path.join(out, f), "rb").read())
    if t.name == os.environ.get("PERTURB"):
        a = numpy_helper.to_array(t) + 1
        open(os.path.join(out, f), "wb").write(numpy_helper.from_array(a, t.name)
                                                .SerializeToString())
sys.exit(rc)
"""


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
        cls.wrapper = os.path.join(cls.dir.name, "opscope_perturbed")
        with open(cls.wrapper, "w") as f:
            f.write(WRAPPER.format(tools=os.path.join(ROOT, "tools"), opscope=OPSCOPE))
        os.chmod(cls.wrapper, os.stat(cls.wrapper).st_mode | stat.S_IXUSR)

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
        p = self.find("m")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("first divergence: node #1 'scale' (Mul), output 'm'", p.stdout)
        self.assertIn("input  'r': shape [2, 8]", p.stdout)
        self.assertIn("input  'w': shape [1, 8]", p.stdout)
        self.assertIn("output 'm': ORT shape [2, 8], opscope shape [2, 8]", p.stdout)

    def test_batches_find_the_same_node(self):
        p = self.find("s", "--batch", "1")
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


if __name__ == "__main__":
    OPSCOPE = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, HERE)
    from corpus_vs_ort import ensure_ort
    why = ensure_ort()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main()
