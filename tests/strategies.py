"""Hypothesis strategies shared by the property tests."""

from hypothesis import strategies as st

import schedatrix as sx


def plans(max_cards: int = 200) -> st.SearchStrategy[sx.Plan]:
    """Random valid plans over every knob's whole allowed range (pools up to ``max_cards``)."""
    return st.builds(
        sx.Plan,
        cards=st.integers(1, max_cards),
        card_class=st.sampled_from(list(sx.CARD_CLASSES)),
        demand_tok_s=st.floats(100, 2_000_000),
        headroom=st.floats(0, 2),
        shape=st.sampled_from(sx.SHAPES),
        window=st.one_of(st.sampled_from(["hour", "day", "week"]), st.floats(0.1, 730)),
        evict_share=st.floats(0, 0.99),
        seed=st.integers(0, 2**63 - 1),
    )
