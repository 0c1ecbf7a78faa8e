// Shared ELMo plumbing for the task configs. `elmo` is null (baseline) or
// {placement: "input" | "output" | "both", l2_coefficient, do_layer_norm, dropout,
//  layers: "all" | "top", gamma: true | false}; the biLM comes from ELMO_OPTIONS_FILE /
// ELMO_WEIGHT_FILE (default: the biLM shipped with the plugin).
{
  // the ELMo options (elmo_plugin.modules.elmo_options.ElmoOptions: the names every ELMo component takes)
  options(elmo):: {
    options_file: std.extVar("ELMO_OPTIONS_FILE"),
    weight_file: std.extVar("ELMO_WEIGHT_FILE"),
    do_layer_norm: elmo.do_layer_norm,
    dropout: elmo.dropout,
    l2_coefficient: elmo.l2_coefficient,
    layers: if std.objectHas(elmo, "layers") then elmo.layers else "all",
    gamma: if std.objectHas(elmo, "gamma") then elmo.gamma else true,
  },
  // width of one ELMo vector: 2 x the biLM's projection
  dim(elmo):: if elmo == null then 0 else 2 * std.parseJson(std.extVar("ELMO_PROJECTION_DIM")),
  at_input(elmo):: elmo != null && (elmo.placement == "input" || elmo.placement == "both"),
  at_output(elmo):: elmo != null && (elmo.placement == "output" || elmo.placement == "both"),
  // token indexers plus the biLM's character indexer when ELMo is on
  indexers(indexers, elmo):: indexers + (if elmo == null then {} else { elmo: { type: "elmo_characters" } }),
  // the TextFieldEmbedder: "basic" for the baseline, else [x_k; ELMo_in; ELMo_out] from one biLM pass.
  // `dropped_by_model`: the ELMo vectors ("input", "output") that the task model's own dropout on
  // the embedded text already drops; they skip ELMo's dropout (each ELMo vector is dropped once).
  embedder(token_embedders, elmo, dropped_by_model=[])::
    local placed = if elmo == null then [] else std.filter(function(name) if name == "input" then $.at_input(elmo) else $.at_output(elmo), dropped_by_model);
    if elmo == null then { token_embedders: token_embedders } else {
    type: "elmo_plugin_placement",
    token_embedders: token_embedders,
    placement: elmo.placement,
    [if placed != [] then "dropped_by_model"]: placed,
  } + $.options(elmo),
  // the task encoder, wrapped so that ELMo_out bypasses it and joins its output
  encoder(encoder, elmo, trailing_dim=0):: if $.at_output(elmo) then {
    type: "elmo_plugin_output_elmo",
    encoder: encoder,
    elmo_dim: $.dim(elmo),
    [if trailing_dim > 0 then "trailing_dim"]: trailing_dim,
  } else encoder,
}
