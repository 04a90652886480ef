"""`spacy-elmo.ElmoTok2Vec.v1`: ELMo concatenated with a task's own token features.

As the paper's downstream models: the task-specific ELMo mix is concatenated
with the task's context-free token representation (e.g. spaCy's
MultiHashEmbed), projected to `width` with a Maxout layer, and optionally fed
to a contextual encoder (e.g. spaCy's MaxoutWindowEncoder) of that width.
The ELMo settings of the task (its mix, the dropout of the mixed vector, the
gradient factor into the biLM) are the `elmo` listener's own arguments.

`output_elmo`, a second listener with a mix of its own, also puts ELMo at the
output (the paper's section 3.3: "include ELMo at the output of the task RNN
by introducing another set of output specific linear weights and replacing
h_k with [h_k; ELMo_k^task]"): the encoder's output is concatenated with that
mix, so the component's output layer reads both.

    [components.tagger.model.tok2vec]
    @architectures = "spacy-elmo.ElmoTok2Vec.v1"
    width = 96

    [components.tagger.model.tok2vec.elmo]
    @architectures = "spacy-elmo.ElmoListener.v1"
    dropout = 0.5
    grad_factor = 1.0

    [components.tagger.model.tok2vec.embed]
    @architectures = "spacy.MultiHashEmbed.v2"
    width = 96
    attrs = ["NORM", "PREFIX", "SUFFIX", "SHAPE"]
    rows = [5000, 1000, 2500, 2500]
    include_static_vectors = false

    [components.tagger.model.tok2vec.encode]
    @architectures = "spacy.MaxoutWindowEncoder.v2"
    width = 96
    depth = 4
    window_size = 1
    maxout_pieces = 3
"""
from typing import List, Optional

from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d


@registry.architectures("spacy-elmo.ElmoTok2Vec.v1")
def ElmoTok2Vec(
    elmo: Model[List, List[Floats2d]],
    width: int,
    embed: Optional[Model[List, List[Floats2d]]] = None,
    encode: Optional[Model[List[Floats2d], List[Floats2d]]] = None,
    maxout_pieces: int = 3,
    dropout: Optional[float] = 0.0,
    output_elmo: Optional[Model[List, List[Floats2d]]] = None,
) -> Model[List, List[Floats2d]]:
    """Concatenate the ELMo mix with `embed`, project to `width`, then `encode`.

    dropout: the Maxout projection's dropout (thinc's `Dropout`: spaCy's
        `[training] dropout` replaces it on every update); the ELMo vector's
        own, fixed dropout is the `elmo` listener's `dropout`.
    output_elmo: a second listener (its own mix) concatenated with the
        encoder's output; the output is then `width` plus its width wide.
    """
    if width < 1:
        raise ValueError(f"ElmoTok2Vec: width must be >= 1, got {width}")
    if encode is not None:
        encode_width = _declared_width(encode)
        if encode_width is not None and encode_width != width:
            raise ValueError(
                f"ElmoTok2Vec: the encoder's width ({encode_width}) differs from width = {width}; "
                "set both to the same value"
            )
    features = concatenate(elmo, embed) if embed is not None else elmo
    layers = [features, with_array(Maxout(nO=width, nP=maxout_pieces, dropout=dropout, normalize=True))]
    if encode is not None:
        layers.append(encode)
    model: Model[List, List[Floats2d]] = chain(*layers)
    model.set_dim("nO", width)
    if output_elmo is not None:
        inner = model
        model = concatenate(inner, output_elmo)
        # known at construction only when the listener projects to a width
        output_width = output_elmo.maybe_get_dim("nO")
        if output_width is not None:
            model.set_dim("nO", width + output_width)
        model.set_ref("output_elmo", output_elmo)
    model.set_ref("elmo", elmo)
    if embed is not None:
        model.set_ref("embed", embed)
    if encode is not None:
        model.set_ref("encode", encode)
    return model


def _declared_width(model: Model) -> Optional[int]:
    for node in model.walk():
        for name in ("nO", "nI"):
            if node.has_dim(name):
                return node.get_dim(name)
    return None


__all__ = ["ElmoTok2Vec"]
