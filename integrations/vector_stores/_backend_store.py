"""`BackendVectorStore`: the API's document methods written once, over a backend's hooks.

The API's `CollectionManageableVectorStore` fixes the signatures of ``get``, ``delete`` and
the pre-computed-vector hooks (``_add_embedding``...). A backend here implements five
narrower hooks instead, each on one named collection (``collection_name``, else the store's
``collection``, else its ``default_collection``) with the call's keyword arguments as one
dict:

- `_fetch` and `_remove`: the documents a `Selection` (ids, else ``filters``) names;
- `_insert` and `_replace`: documents that all have vectors;
- `_search`: the documents nearest each of several vectors, one list per vector (a
  backend that searches many vectors in one query does so; one that cannot loops), so
  the context retrieval action's batched lookups reach every backend alike.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from flink_agents.api.vector_stores.vector_store import CollectionManageableVectorStore, Document

__all__ = ["BackendVectorStore", "Selection"]


@dataclass(frozen=True)
class Selection:
    """What a call works on."""

    collection: str
    """The collection's name."""
    ids: list[str] | None
    """The documents' ids (None: no ids given)."""
    filters: dict[str, Any] | None
    """Metadata equalities the documents must meet (the API's unified dialect)."""
    options: dict[str, Any]
    """The call's keyword arguments (the store's ``store_kwargs`` under the call's own)."""


class BackendVectorStore(CollectionManageableVectorStore, ABC):
    """A collection-managing store that implements the backend hooks (module doc)."""

    default_collection: ClassVar[str]
    """The collection a call uses when neither it nor the store names one."""

    def collection_name(self, collection_name: str | None) -> str:
        """The collection a call works on."""
        return collection_name or self.collection or self.default_collection

    def get(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = 100,
        **kwargs: Any,
    ) -> list[Document]:
        return self._fetch(self._selection(collection_name, ids, filters, kwargs), limit)

    def delete(
        self,
        ids: str | list[str] | None = None,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._remove(self._selection(collection_name, ids, filters, kwargs))

    def _add_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return self._insert(self.collection_name(collection_name), documents, kwargs)

    def _update_embedding(
        self,
        *,
        documents: list[Document],
        collection_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        self._replace(self.collection_name(collection_name), documents, kwargs)

    def _query_embedding(self, embedding: list[float], *args: Any, **kwargs: Any) -> list[Document]:
        """`_query_embeddings` of one vector."""
        [found] = self._query_embeddings([embedding], *args, **kwargs)
        return found

    def _query_embeddings(
        self,
        embeddings: list[Any],
        limit: int = 10,
        collection_name: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> list[list[Document]]:
        return self._search(
            self._selection(collection_name, None, filters, kwargs), embeddings, limit
        )

    def _selection(
        self,
        collection_name: str | None,
        ids: str | list[str] | None,
        filters: dict[str, Any] | None,
        options: dict[str, Any],
    ) -> Selection:
        if isinstance(ids, str):
            ids = [ids]
        elif ids is not None:
            ids = list(ids)
        return Selection(self.collection_name(collection_name), ids, filters, options)

    @abstractmethod
    def _fetch(self, selection: Selection, limit: int | None) -> list[Document]:
        """The selected documents: those with the ids, or (no ids) up to ``limit`` of
        those matching the filters (``limit=None``: all of them)."""

    @abstractmethod
    def _remove(self, selection: Selection) -> None:
        """Delete the documents with the ids, or those matching the filters; neither
        given: every document of the collection."""

    @abstractmethod
    def _insert(self, name: str, documents: list[Document], options: dict[str, Any]) -> list[str]:
        """Store documents that all have vectors in collection ``name``; their ids (made
        for those without one), in order."""

    @abstractmethod
    def _replace(self, name: str, documents: list[Document], options: dict[str, Any]) -> None:
        """Replace documents of collection ``name`` (by ``Document.id``) that all have
        vectors."""

    @abstractmethod
    def _search(
        self, selection: Selection, embeddings: list[Any], limit: int
    ) -> list[list[Document]]:
        """The documents matching the selection's filters nearest each vector, nearest
        first: one list per vector, in order."""
