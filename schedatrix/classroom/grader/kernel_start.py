"""Start nbval's kernel again when one never answers: a notebook is judged by its cells, not
by one unlucky kernel start.

Now and then a freshly started ipykernel stays alive without ever answering nbval's first
``kernel_info`` request (this project's CI lost a whole lesson to one: "Kernel didn't respond
in 60 seconds", every cell an error, on a run where the same notebook had passed minutes
before). nbval starts one kernel per notebook and gives up on the first failure. Here a
kernel that does not come up within nbval's startup timeout is shut down and a fresh one
started, up to :data:`ATTEMPTS` starts in all; each retry is reported as a warning, so it
shows in pytest's summary, and a kernel that never comes up still fails the notebook, with
the number of starts tried. (nbval shuts down a kernel that timed out or died; one whose
IOPub never came up after it answered is left to end with the pytest process, as ipykernel
does when its parent exits.)

Standard library only, and no import from the package: the grading sandbox's runner
(``nbval_run.py``, run by path) imports it as a sibling module, the classroom's pytest plugin
as ``schedatrix.classroom.grader.kernel_start``.
"""

from __future__ import annotations

import warnings

#: Kernel starts per notebook, the first included.
ATTEMPTS = 3


class KernelRestarted(UserWarning):
    """A notebook's first kernel never answered and a fresh one was started."""


def patient(start, attempts: int = ATTEMPTS):
    """Wrap ``start`` (nbval's ``RunningKernel``) so a start that fails with nbval's
    ``RuntimeError`` (timed out, died before replying, IOPub never up) is tried again."""
    if attempts < 1:
        raise ValueError(f"attempts is {attempts!r}; allowed: 1 or more")
    if getattr(start, "_schedatrix_patient", False):
        return start

    def start_patiently(*args, **kwargs):
        where = kwargs.get("cwd") or "."
        for attempt in range(1, attempts):
            try:
                return start(*args, **kwargs)
            except RuntimeError as error:
                warnings.warn(KernelRestarted(
                    f"a kernel for a notebook in {where} did not come up ({error}); "
                    f"started a fresh one (start {attempt + 1} of {attempts})"), stacklevel=2)
        try:
            return start(*args, **kwargs)
        except RuntimeError as error:
            raise RuntimeError(f"{error} (the kernel for a notebook in {where} failed to "
                               f"start {attempts} times in a row)") from error

    start_patiently._schedatrix_patient = True
    start_patiently.__wrapped__ = start
    return start_patiently


def install(attempts: int = ATTEMPTS) -> bool:
    """Make nbval's notebooks start their kernels patiently (in this process). False where
    nbval is not installed or no longer starts kernels the way this expects."""
    try:
        import nbval.plugin as nbval_plugin
    except ImportError:
        return False
    start = getattr(nbval_plugin, "RunningKernel", None)
    if start is None:
        return False
    nbval_plugin.RunningKernel = patient(start, attempts)
    return True
