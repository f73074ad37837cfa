"""kimi_k3 is refused on purpose (architectures.NOT_MODELLED), with what is missing named: one line,
exit 2, no traceback — a config people bring (moonshotai/Kimi-K3, remote code) is never costed wrongly."""
import json

from symcost.cli import main


def test_kimi_k3_refusal_names_what_is_missing(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "kimi_k3", "text_config": {"model_type": "kimi_linear",
                                                                          "attn_res_block_size": 12}}))
    assert main(["params", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "kimi_k3" in err[0] and "attn_res_block_size" in err[0]
    assert captured.out == ""
