"""OntoNotes genres: the first part of a document id ("bc/cctv/00/cctv_0000"); any other genre
gets the index `len(GENRES)`."""

GENRES = ("bc", "bn", "mz", "nw", "pt", "tc", "wb")
