// CoNLL-2003 NER biLSTM-CRF + ELMo at the input (Supplement A.7: lambda = 0.1).
// Paper: 92.22 test F1 with the 5.5B biLM and Senna vectors. The biLM defaults to the plugin's
// shipped small biLM (elmo_bilm/pretrained/small); ELMO_OPTIONS_FILE / ELMO_WEIGHT_FILE choose another.
// Run: allennlp train training_config/conll2003_crf_tagger_elmo.jsonnet -s out/ner --include-package elmo_plugin
local tagger = import "conll2003_crf_tagger.libsonnet";

// ELMo settings: the Table 2 / Table 3 ablations are a one-line change.
local elmo_placement = "input";  // "input", "output" or "both"
local elmo_lambda = 0.1;
local elmo_layer_norm = false;
local elmo_dropout = 0.0;  // the encoder's variational dropout (0.5) already covers ELMo at its input; ELMo at the output bypasses it, so give it dropout here for "output" / "both"

tagger(elmo={ placement: elmo_placement, l2_coefficient: elmo_lambda, do_layer_norm: elmo_layer_norm, dropout: elmo_dropout })
