"""Annotation queues: named filters over arriving runs that hand people one run at a time to label.

A queue (model.py) selects runs by their facts and a deterministic sample (sampling.py); the filler
(fill.py, run by service.py on its own thread through the store's single writer) adds the runs that
ended since the queue's watermark, and backfill adds past runs of a time range. People take items
(items.py: claims with a lease), label them (the labels become scores through the scores write path)
or skip them; results.py and agreement.py read what they decided.
"""
