"""te_mlir.recipe: TE's recipes with TE's defaults, quantizer state over
steps against the numpy reference, and fp8_autocast; and the collectives
of te_mlir.ops (and DelayedScaling's amax reduction) under mpirun."""

import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import te_mlir
from te_mlir import ops, recipe

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir,
                                "te-run"))
import fp8_reference as fp8_ref  # noqa: E402

E4M3, E5M2 = "f8E4M3FN", "f8E5M2"



def test_defaults_are_te_defaults():
    d = recipe.DelayedScaling()
    assert (d.margin, d.fp8_format, d.amax_history_len, d.amax_compute_algo,
            d.reduce_amax) == (0, recipe.Format.HYBRID, 1024, "max", True)
    c = recipe.Float8CurrentScaling()
    assert c.fp8_format == recipe.Format.HYBRID
    assert c.fp8_quant_fwd_inp == recipe.QParams(False, 0.0)
    assert recipe.MXFP8BlockScaling().fp8_format == recipe.Format.E4M3
    b = recipe.Float8BlockScaling()
    assert b.fp8_format == recipe.Format.E4M3
    assert b.fp8_quant_fwd_weight == recipe.QParams(True, 0.0)
    assert (b.x_block_scaling_dim, b.w_block_scaling_dim,
            b.grad_block_scaling_dim) == (1, 2, 1)
    # TE's classmethods.
    assert recipe.DelayedScaling.delayed() and d.float8_per_tensor_scaling()
    assert recipe.Float8CurrentScaling.float8_per_tensor_scaling()
    assert not recipe.MXFP8BlockScaling.delayed()
    assert recipe.Float8BlockScaling.float8_block_scaling()
    # HYBRID: E4M3 forward, E5M2 gradients.
    assert (d.fp8_type("input"), d.fp8_type("weight"),
            d.fp8_type("grad")) == (E4M3, E4M3, E5M2)
    for bad in (lambda: recipe.DelayedScaling(fp8_format=recipe.Format.E5M2),
                lambda: recipe.DelayedScaling(amax_compute_algo="mean"),
                lambda: recipe.DelayedScaling(
                    scaling_factor_compute_algo=lambda *a: 1.0),
                lambda: recipe.Float8BlockScaling(w_block_scaling_dim=3),
                lambda: recipe.Float8BlockScaling(x_block_scaling_dim=2),
                lambda: recipe.Float8BlockScaling(fp8_mha=True),
                lambda: recipe.DelayedScaling(backward_override="fp8")):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(NotImplementedError, match="2-D MXFP8"):
        recipe.MXFP8BlockScaling(enable_2d_quantization=True)


def test_environment_switches_are_read_at_import():
    """TE reads NVTE_FP8_CURRENT_SCALING_POWER_2_SCALES,
    NVTE_FP8_BLOCK_SCALING_FP32_SCALES and NVTE_BACKWARD_OVERRIDE when the
    recipes are defined; the QParams are class attributes."""
    env = dict(os.environ, NVTE_FP8_CURRENT_SCALING_POWER_2_SCALES="1",
               NVTE_FP8_BLOCK_SCALING_FP32_SCALES="1",
               NVTE_BACKWARD_OVERRIDE="dequantized")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        from te_mlir import recipe
        c, b = recipe.Float8CurrentScaling(), recipe.Float8BlockScaling()
        print(c.use_power_2_scales, c.fp8_quant_bwd_grad.power_2_scale,
              b.fp8_quant_fwd_inp.power_2_scale, c.backward_override)
        """)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["True", "True", "False", "dequantized"], \
        proc.stdout + proc.stderr
    # As in TE, the constructor's use_power_2_scales does not reach them.
    assert not recipe.Float8CurrentScaling(
        use_power_2_scales=True).fp8_quant_fwd_inp.power_2_scale


@pytest.mark.parametrize("length", [3, 1])
@pytest.mark.parametrize("algo,margin", [("max", 0), ("most_recent", 2),
                                         ("max", 1), ("most_recent", 0)])
def test_delayed_scaling_state_over_steps(algo, margin, length):
    r = recipe.DelayedScaling(amax_history_len=length,
                              amax_compute_algo=algo, margin=margin)
    quantizer = r.quantizer("grad")
    assert quantizer.fp8 == E5M2
    history, scale = np.zeros(length, np.float32), np.float32(1.0)
    rng = np.random.default_rng(0)
    for step, magnitude in enumerate([1.0, 50.0, 0.5, 0.01, 3.0]):
        x = (rng.standard_normal((16, 32)) * magnitude).astype(np.float32)
        q = quantizer(x)
        # This step is cast with the scale the earlier steps gave ...
        assert q.scale_inv == np.float32(1) / scale, step
        assert fp8_ref.same_fp8_bits(q.data.view(np.uint8),
                                     fp8_ref.cast_fp8(x * scale, E5M2)).all()
        # ... and its amax decides the next one.
        history, scale = fp8_ref.update_delayed_scaling(
            history, fp8_ref.amax_of(x), scale, E5M2, algo, margin)
        np.testing.assert_array_equal(quantizer.amax_history, history)
        assert quantizer.scale == scale, step


def test_stateless_recipes_quantize_as_the_ops_do():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((256, 256)).astype(np.float32)
    cur = recipe.Float8CurrentScaling()
    cur.fp8_quant_bwd_grad = recipe.QParams(power_2_scale=True)
    got = cur.quantizer("grad")(x)
    want = ops.quantize(x, "e5m2", pow2_scales=True)
    assert got.fp8 == E5M2 and got.scale_inv == want.scale_inv
    np.testing.assert_array_equal(got.data.view(np.uint8),
                                  want.data.view(np.uint8))
    assert recipe.MXFP8BlockScaling().quantizer()(x).mode == "mxfp8_1x32"
    block = recipe.Float8BlockScaling()
    assert block.quantizer("weight")(x).scale_inv.shape == (2, 2)
    assert block.quantizer("input")(x).scale_inv.shape == (256, 2)
    # Activations of higher rank are seen as matrices, as TE does.
    q = block.quantizer("input")(x.reshape(4, 64, 256))
    assert q.data.shape == (256, 256) and q.scale_inv.shape == (256, 2)
    t = recipe.DelayedScaling().quantizer()(x.reshape(4, 64, 256),
                                            transpose=True)
    assert t.columnwise_data.shape == (256, 256)


def test_fp8_autocast_stacks_per_thread():
    assert not recipe.is_fp8_enabled()
    assert recipe.get_fp8_recipe() == recipe.DelayedScaling()
    mx = recipe.MXFP8BlockScaling()
    seen = []
    with recipe.fp8_autocast(fp8_recipe=mx):
        assert recipe.is_fp8_enabled() and recipe.get_fp8_recipe() is mx
        with recipe.autocast(enabled=False, calibrating=True):
            assert not recipe.is_fp8_enabled()
            assert recipe.is_fp8_calibrating()
        assert recipe.get_fp8_recipe() is mx
        t = threading.Thread(target=lambda: seen.append(
            recipe.is_fp8_enabled()))
        t.start()
        t.join()
    assert seen == [False] and not recipe.is_fp8_enabled()
    with pytest.raises(TypeError, match="Recipe"):
        with recipe.fp8_autocast(fp8_recipe="delayed"):
            pass


# --- Collectives under mpirun -------------------------------------------

MPIRUN = shutil.which("mpirun")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}

RANKS_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from te_mlir import ops, recipe
    rank, size = ops.world()
    assert size == 2, size
    x = np.arange(8, dtype=np.float32).reshape(2, 4) + 100 * rank
    everyone = [np.arange(8, dtype=np.float32).reshape(2, 4) + 100 * r
                for r in range(size)]
    np.testing.assert_array_equal(ops.all_reduce(x), sum(everyone))
    np.testing.assert_array_equal(ops.all_reduce(x, "max"), everyone[-1])
    np.testing.assert_array_equal(ops.all_gather(x, dim=1),
                                  np.concatenate(everyone, axis=1))
    np.testing.assert_array_equal(ops.reduce_scatter(x, dim=1),
                                  np.split(sum(everyone), 2, axis=1)[rank])
    np.testing.assert_array_equal(
        ops.all_to_all(x, 1, 0),
        np.concatenate([np.split(e, 2, axis=1)[rank] for e in everyone]))
    np.testing.assert_array_equal(ops.permute(x, 1), everyone[rank - 1])
    # DelayedScaling reduces amaxes over the job: both ranks agree.
    q = recipe.DelayedScaling(amax_history_len=2).quantizer()
    q(np.full((4, 4), 1.0 + 3 * rank, np.float32))
    np.testing.assert_array_equal(q.amax_history, [4.0, 0.0])
    open(sys.argv[1] + f"/rank{rank}.ok", "w").close()
""")


@pytest.mark.skipif(MPIRUN is None, reason="mpirun is missing: "
                    "scripts/bootstrap.sh installs OpenMPI")
def test_collectives_under_mpirun(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS_SCRIPT)
    env = dict(os.environ, **MPI_ENV, TE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([MPIRUN, "--bind-to", "none", "-np", "2",
                           sys.executable, str(script), str(tmp_path)],
                          env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Each rank marks that it passed every check (their stdout interleaves).
    assert sorted(p.name for p in tmp_path.glob("rank*.ok")) == [
        "rank0.ok", "rank1.ok"], proc.stdout + proc.stderr


def test_collectives_alone_are_the_identity():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert ops.world() == (0, 1)
    for y in (ops.all_reduce(x), ops.all_gather(x), ops.permute(x, 1),
              ops.reduce_scatter(x, dim=1)):
        np.testing.assert_array_equal(y, x)
    with pytest.raises(te_mlir.ShapeError, match="divisible"):
        ops.reduce_scatter(x, dim=1, group_size=2)
    # Dimensions count from the end when negative, as numpy's do; others
    # are refused with the rank, before any program is written.
    np.testing.assert_array_equal(ops.all_gather(x, dim=-1), x)
    np.testing.assert_array_equal(ops.all_to_all(x, -2, np.int64(1)), x)
    for call, name, dim in (
            (lambda: ops.all_gather(x, dim=5), "dim", 5),
            (lambda: ops.all_gather(x, dim=-3), "dim", -3),
            (lambda: ops.reduce_scatter(x, dim=2), "dim", 2),
            (lambda: ops.all_to_all(x, 0, 2), "concat_dim", 2),
            (lambda: ops.all_to_all(x, 7, 0), "split_dim", 7)):
        with pytest.raises(te_mlir.ShapeError,
                           match=rf"{name}={dim} is out of range for x of "
                           r"rank 2 \(shape \[2, 3\]\)"):
            call()
    with pytest.raises(TypeError, match="dim=1.5: expected an integer"):
        ops.all_gather(x, dim=1.5)
    # Groups larger than the runtime takes are refused by the verifier.
    with pytest.raises(te_mlir.CompileError, match="size 1099511627776 "
                       r"exceeds the 1048576 ranks \(2\^20\)"):
        ops.all_reduce(x, group_size=2**40)
