"""The domain core: the words and shapes every other room uses, defined once.

``vocab`` (Order, Verdict, ParseStatus, Decoding, the cell key), ``items`` (PairItem, PointItem),
``design`` (the trial grid), ``judgment`` (the stored row and its one builder), ``ranges`` (the range of
every number that arrives from outside), ``guards`` (limits on input), ``registry`` (names -> objects,
imported lazily), ``redact`` (the one secret scrubber), ``stopping`` (how a command stops on Ctrl-C or
SIGTERM), ``viewer_links`` (the viewer's addresses, shared by the report and the viewer) and
``versions`` (installed distributions' versions, from their metadata).  The core imports nothing else of
verdictlab but :mod:`verdictlab.errors`.
"""
