"""Quality beside speed: salted-needle retrieval at long context, and paired answer agreement.

``needle`` hides random facts in a long prose prompt and asks for them back; ``agree`` asks two
endpoints the same multiple-choice questions and tests whether they answer alike. Both write
results that carry their conditions and restate them as quality points in the recipe record's
perf-point shape.
"""
