"""Regression: `replace_listeners` left a component's second ElmoListener listening.

spaCy's `Language.replace_listeners` iterates over the upstream's list of a
component's listeners while calling `remove_listener` for each; removing in
place from that same list made it skip every other listener, so a component
with two (ElmoTok2Vec's `elmo` and `output_elmo`) kept one registered and
got one biLM copy instead of two. `remove_listener` now leaves a new list.
"""
from spacy_elmo.layers import ElmoListenerLayer


def test_removing_a_listener_leaves_the_list_being_iterated_intact(nlp_elmo):
    elmo = nlp_elmo.get_pipe("elmo")
    first, second = ElmoListenerLayer("elmo"), ElmoListenerLayer("elmo")
    elmo.add_listener(first, "tagger")
    elmo.add_listener(second, "tagger")
    removed = []
    for listener in elmo.listener_map["tagger"]:  # what spaCy's replace_listeners does
        removed.append(elmo.remove_listener(listener, "tagger"))
    assert removed == [True, True]
    assert "tagger" not in elmo.listener_map
    assert not elmo.listeners
