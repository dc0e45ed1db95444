"""The serving model held to published measurements (docs/serving-validation.md): each row of
:mod:`..published` replayed as its source ran it (:mod:`.replay`, speculative decoding's in
:mod:`.spec`), and the studies that say why rows miss, each by runs that change the cause
(:mod:`.lockstep_floor`, :mod:`.online_arrivals`, :mod:`.lora_regime`)."""
