#!/usr/bin/python3
"""Unit tests of the corpus tooling that need neither the corpus nor ONNX Runtime:
tools/ort_compare.py (input specs, seeded inputs, the tolerance) and the skip path of
tests/corpus_vs_ort.py. Run: /usr/bin/python3 tests/corpus_tools_test.py"""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
import ort_compare as oc  # noqa: E402


def one_input_model(dims, elem=TensorProto.FLOAT, name="x"):
    x = helper.make_tensor_value_info(name, elem, dims)
    y = helper.make_tensor_value_info("y", elem, dims)
    g = helper.make_graph([helper.make_node("Identity", [name], ["y"])], "g", [x], [y])
    return helper.make_model(g)


class SpecTest(unittest.TestCase):
    def test_parses_dims_scalars_and_values(self):
        self.assertEqual(oc.parse_spec("x=1x3x48x320;sr=@16000; h=2x1x64"),
                         {"x": ([1, 3, 48, 320], None), "sr": ([], "16000"),
                          "h": ([2, 1, 64], None)})
        self.assertEqual(oc.parse_spec(""), {})

    def test_rejects_malformed_items(self):
        with self.assertRaisesRegex(oc.SpecError, "NAME=DIMS"):
            oc.parse_spec("x1x3")
        with self.assertRaisesRegex(oc.SpecError, "1x3x224x224"):
            oc.parse_spec("x=1xAx3")


class InputsTest(unittest.TestCase):
    def test_dynamic_dims_need_a_shape(self):
        with self.assertRaisesRegex(oc.SpecError, "input 'x' has dynamic dims"):
            oc.make_inputs(one_input_model(["batch", 4]), "", seed=1)

    def test_seeded_shapes_values_and_dtypes(self):
        a = oc.make_inputs(one_input_model(["batch", 4]), "x=2x4", seed=7)["x"]
        b = oc.make_inputs(one_input_model(["batch", 4]), "x=2x4", seed=7)["x"]
        self.assertEqual(a.shape, (2, 4))
        self.assertEqual(a.dtype, np.float32)
        np.testing.assert_array_equal(a, b)
        self.assertTrue((a >= -1).all() and (a <= 1).all() and np.unique(a).size == 8)
        sr = oc.make_inputs(one_input_model([], TensorProto.INT64, "sr"), "sr=@16000", 1)["sr"]
        self.assertEqual((sr.shape, sr.dtype, int(sr)), ((), np.int64, 16000))

    def test_written_inputs_round_trip(self):
        feeds = oc.make_inputs(one_input_model([3, 5]), "", seed=3)
        with tempfile.TemporaryDirectory() as d:
            args = oc.write_inputs(feeds, d)
            self.assertEqual(args[0], "--input")
            name, pb = args[1].split("=", 1)
            t = TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            from onnx import numpy_helper
            np.testing.assert_array_equal(numpy_helper.to_array(t), feeds["x"])
            raw = np.fromfile(os.path.join(d, "input_0.bin"), dtype=np.float32).reshape(3, 5)
            np.testing.assert_array_equal(raw, feeds["x"])


class CompareTest(unittest.TestCase):
    def setUp(self):
        self.ref = np.random.default_rng(0).standard_normal(1000).astype(np.float32)

    def test_relative_l2_threshold(self):
        noise = np.random.default_rng(1).standard_normal(1000)
        scale = np.linalg.norm(self.ref) / np.linalg.norm(noise)
        ok, metric = oc.compare(self.ref + noise * scale * 0.9e-3, self.ref)
        self.assertTrue(ok, metric)
        ok, metric = oc.compare(self.ref + noise * scale * 1.1e-3, self.ref)
        self.assertFalse(ok, metric)
        self.assertIn("rel_l2=", metric)

    def test_saturated_outputs_use_the_absolute_bound(self):
        ref = np.zeros(10, np.float32)
        self.assertTrue(oc.compare(ref + 5e-7, ref)[0])
        self.assertFalse(oc.compare(ref + 5e-6, ref)[0])

    def test_shapes_nans_and_integers(self):
        self.assertFalse(oc.compare(self.ref.reshape(10, 100), self.ref)[0])
        nan = self.ref.copy()
        nan[3] = np.nan
        self.assertFalse(oc.compare(nan, self.ref)[0])
        self.assertTrue(oc.compare(nan, nan.copy())[0])
        i = np.arange(6, dtype=np.int64)
        self.assertTrue(oc.compare(i, i.copy())[0])
        j = i.copy()
        j[2] = 7
        self.assertEqual(oc.compare(j, i), (False, "1 of 6 elements differ"))


class CorpusTestSkips(unittest.TestCase):
    def test_skips_with_a_reason_when_nothing_was_fetched(self):
        with tempfile.TemporaryDirectory() as empty:
            p = subprocess.run([sys.executable, os.path.join(HERE, "corpus_vs_ort.py"),
                                "--models", empty], capture_output=True, text=True)
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertIn("models/corpus/fetch.sh", p.stdout)


if __name__ == "__main__":
    unittest.main()
