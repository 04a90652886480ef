"""The catalogue of published models: every entry well formed, every name unique, the known names found."""
from spacy_elmo.io.catalogue import catalogue, lookup


def test_every_catalogue_entry_is_well_formed():
    names = set()
    for entry in catalogue().values():
        assert entry.name == entry.name.lower() and len(entry.files) in (1, 2)
        assert all(f.url.startswith(("http://", "https://")) for f in entry.files)
        assert all(f.sha256 is None or len(f.sha256) == 64 for f in entry.files)
        assert entry.licence and entry.page and entry.language
        for name in (entry.name, *entry.aliases):
            assert name not in names
            names.add(name)
    efml = [e for e in catalogue().values() if e.name.startswith("efml-") and e.name != "efml-zh-hans"]
    assert len(efml) == 44
    for name in ("small", "medium", "original", "original-5.5b", "pubmed", "efml-zh", "nlpl-210"):
        assert lookup(name) is not None
