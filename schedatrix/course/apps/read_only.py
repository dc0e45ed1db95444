"""The course opened for reading: a Jupyter server contents manager that serves the committed
lessons (``notebooks/``) and solutions (``solutions/``) read-only.

``python3 dev.py course`` starts JupyterLab with it. The test suite checks those notebooks
against their stored outputs (nbval), and JupyterLab autosaves every open notebook every two
minutes: a lesson someone was reading, half run, ended up on disk (a progress bar at "58%",
outputs of a run that had not finished) and the suite then failed on it. Here every file and
folder under those two reports itself not writable, so JupyterLab shows the notebook as
read-only, never autosaves it, and answers Ctrl+S with "use Save As"; the server refuses
anything that would write there all the same (save, upload, new file, rename, delete,
checkpoint restore) with 403 and a line saying what to do. Cells still run: the outputs live
in the browser's copy. Save As into another folder keeps a copy of a run.

Everything else (``exercises/``, ``docs/``, the root) stays writable. ``python3 dev.py course
--edit`` starts JupyterLab with the ordinary contents manager, for editing the lessons.
"""

from __future__ import annotations

import posixpath

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado import web
from traitlets import List, Unicode

__all__ = ["CourseContents", "READ_ONLY"]

#: The folders served read-only: the notebooks the suite checks against their outputs.
READ_ONLY = ("notebooks", "solutions")


class CourseContents(AsyncLargeFileManager):
    """JupyterLab's own contents manager, with :attr:`read_only` folders that nothing writes
    to."""

    read_only = List(Unicode(), default_value=list(READ_ONLY), config=True,
                     help="Top-level folders (relative to the server's root) served "
                          "read-only: never autosaved, never written.")

    def locked(self, path: str) -> bool:
        """Whether the API path ``path`` is one of :attr:`read_only` or lies under one."""
        path = posixpath.normpath("/" + str(path).replace("\\", "/"))   # no way round by ..
        return path.split("/")[1] in self.read_only

    def _refuse(self, path: str, what: str):
        return web.HTTPError(
            403, f"{path} is read-only while the course is open with `python3 dev.py course` "
                 f"(the test suite checks it as committed): {what} refused. Use File > Save "
                 "As to keep a copy elsewhere (exercises/ or the root), or open the course "
                 "with `python3 dev.py course --edit` to edit the lessons.")

    def is_writable(self, path):
        """Not writable under a read-only folder (the ``writable`` JupyterLab reads before
        it autosaves or saves); elsewhere as the file system says."""
        return False if self.locked(path) else super().is_writable(path)

    async def save(self, model, path=""):
        if self.locked(path):
            raise self._refuse(path, "saving")
        return await super().save(model, path)

    async def delete_file(self, path):
        if self.locked(path):
            raise self._refuse(path, "deleting")
        return await super().delete_file(path)

    async def rename_file(self, old_path, new_path):
        for path in (old_path, new_path):
            if self.locked(path):
                raise self._refuse(path, "renaming or moving")
        return await super().rename_file(old_path, new_path)

    async def restore_checkpoint(self, checkpoint_id, path):
        if self.locked(path):
            raise self._refuse(path, "reverting to a checkpoint")
        return await super().restore_checkpoint(checkpoint_id, path)
