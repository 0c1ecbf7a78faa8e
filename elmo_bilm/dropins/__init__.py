"""Drop-ins: other libraries' ELMo APIs over this package's biLM and engine, one module per
original, each behaving as its original does by default (its defaults, module surface, carried
LSTM state and arguments; docs/pytorch.md and docs/models.md have the table per family):

- `allennlp`: AllenNLP's `Elmo`, `batch_to_ids` and AllenNLP 0.9's `ElmoEmbedder`
  (documented as `elmo_bilm` and `elmo_bilm.elmo`);
- `elmoformanylangs`: ELMoForManyLangs' `Embedder` (`elmo_bilm.elmoformanylangs`);
- `simple_elmo`: NLPL's simple_elmo `ElmoModel` (`elmo_bilm.simple_elmo`);
- `bio_embeddings`: bio_embeddings' `SeqVecEmbedder` and its module's names
  (`elmo_bilm.bio_embeddings`);
- `tfhub`: TF-Hub's ELMo module as `ElmoModule` (`elmo_bilm.tfhub`);
- `flair`: flair's `ELMoEmbeddings` (`elmo_bilm.flair`; needs flair).

A script switches to one with its import line; the shorter documented paths are aliases of these
modules (one-line modules, listed in `elmo_bilm.ALIASES`). Each adapter keeps no batch loop of its
own: its original's batching is an `elmo_bilm.runtime.engine.Batching`, its layer choice a
`elmo_bilm.runtime.layers.Layers`, its device read by `elmo_bilm.utils.devices`.
"""
