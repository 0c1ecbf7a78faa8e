"""Figure 2: the softmax-normalised ELMo layer weights (and gamma) that trained task models learned."""

from typing import Dict, List

from elmo_plugin.modules.elmo import ElmoRepresentations
from elmo_plugin.modules.scalar_mix import ElmoScalarMix


def mix_weights(model) -> List[Dict]:
    """Every ELMo mix of `model`: its module name, its placement (input / output, as the
    `ElmoRepresentations` holding it says), its softmax-normalised weights per biLM layer and its
    gamma."""
    placements = {
        id(mix): placement
        for module in model.modules()
        if isinstance(module, ElmoRepresentations)
        for mix, placement in zip(module.scalar_mixes, module.placement.mixes)
    }
    return [
        {
            "name": name,
            "weights": [float(w) for w in module.normalized_weights().detach().cpu()],
            "gamma": float(module.gamma.detach().cpu()),
            "trained": bool(module.scalar_parameters[0].requires_grad),
            **({"placement": placements[id(module)]} if id(module) in placements else {}),
        }
        for name, module in model.named_modules()
        if isinstance(module, ElmoScalarMix)
    ]


def weights_figure(results: Dict[str, List[Dict]]):
    """A Figure 2 style chart: one panel per archive, a bar per biLM layer for each mix."""
    from elmo_plugin.analysis.report import pyplot

    plt = pyplot()
    figure, axes = plt.subplots(1, len(results), figsize=(3.2 * len(results), 2.6), squeeze=False)
    for axis, (label, mixes) in zip(axes[0], results.items()):
        width = 0.8 / max(len(mixes), 1)
        for k, mix in enumerate(mixes):
            layers = range(len(mix["weights"]))
            axis.bar(
                [x + k * width for x in layers],
                mix["weights"],
                width,
                label=mix.get("placement", mix["name"]),
            )
        axis.set_title(label, fontsize=9)
        axis.set_xlabel("biLM layer")
        axis.set_ylim(0, 1)
        axis.set_xticks(list(range(len(mixes[0]["weights"]))) if mixes else [])
        axis.legend(fontsize=7)
    axes[0][0].set_ylabel("softmax(w)")
    figure.tight_layout()
    return figure
