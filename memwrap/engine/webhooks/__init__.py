"""Webhooks on memory events (docs/webhooks.md).

    subscriptions.py  a bank's subscriptions (url, events, secret, include_text, enabled)
    events.py         emit(): in the transaction of a change, one delivery and one job per subscription
    delivery.py       the 'webhook' job: one signed POST per attempt, retried by the queue; the delivery log
    signing.py        HMAC-SHA256 over "timestamp.body", and the headers
    urls.py           which URLs a subscription may have (and MEMWRAP_WEBHOOK_ALLOW_PRIVATE_ADDRESSES)
    verbs.py          the engine's webhook verbs

Where each event is emitted: retained (retain/write.py, retain/facts.py: the units a retain wrote, or the facts
an extraction wrote), updated (update.py), invalidated (learn/forgetting.py), deleted (memories/catalog.py),
observation.changed (learn/observations.py: every new version of an observation), mental_model.refreshed
(learn/mental_models.py).
"""

from memwrap.engine.webhooks.events import KIND, emit

__all__ = ["KIND", "emit"]
