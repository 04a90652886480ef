"""`info`: the catalogue (--list) and the machine's CPU."""
import json

from spacy_elmo.cli import app
from spacy_elmo.io.catalogue import catalogue

from .invoke import runner


def test_info_list_prints_the_catalogue():
    result = runner.invoke(app, ["info", "--list"])
    assert result.exit_code == 0, result.output
    for name in ("small", "original-5.5b", "efml-zh", "nlpl-210", "licence"):
        assert name in result.output
    result = runner.invoke(app, ["info", "--list", "--json"])
    entries = json.loads(result.output)
    assert {e["name"] for e in entries} == set(catalogue())
    assert all("sha256" in f for e in entries for f in e["files"])


def test_info_names_the_cpu(tmp_path):
    from spacy_elmo.machine import cpu_name

    result = runner.invoke(app, ["info", "--json"])
    machine = json.loads(result.output)["machine"]
    assert machine["cpu"] == cpu_name() and machine["cpu"] not in ("", "unknown")
    assert machine["cpu_cores"] >= 1 and "cuda_device" in machine
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Some CPU @ 2.00GHz\n")
    assert cpu_name(cpuinfo) == "Some CPU @ 2.00GHz"
    assert cpu_name(tmp_path / "missing")  # falls back to what platform knows


def test_info_names_the_token_layer_of_the_embedded_model_and_of_a_published_one(allennlp_dir):
    embedded = json.loads(runner.invoke(app, ["info", "--json"]).output)
    assert embedded["token_encoder"] == "characters + word table (34,983 x 50, trainable)"
    assert embedded["metadata"]["word_table"]["source"]["license"] == "PDDL-1.0"
    published = json.loads(runner.invoke(app, ["info", str(allennlp_dir), "--json"]).output)
    assert published["token_encoder"] == "characters"
