"""What every part of the store builds on, importing nothing else of the store: the one clock
(``clock``), the cipher of secrets at rest and its key file (``secrets``), and peewee as the
store uses it, typed (``typed_peewee``)."""
