"""`stepscope try`: a change measured before anyone edits a file (docs/try.md).

The pure part of it: the change and its diff (`change.py`), the changes a finding can try
(`variants.py`), the try's document (`result.py`) and its words (`present.py`). The scratch copy
the change runs in is `capture/scratch.py`; the pipeline is `commands/try_.py`.
"""
