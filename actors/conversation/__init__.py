"""The conversation as canonical messages: the model, its JSON form and its projections.

Neither Cursor protobuf nor any provider format is known here: the checkpoint code and every
provider depend on this package, never on each other.
"""
