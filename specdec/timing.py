"""Wall-clock laps of a decoding step that count the device's queued work too."""

from __future__ import annotations

import time

import torch


def sync_device(device: torch.device) -> None:
    """Wait for queued GPU work, so that a wall-clock reading covers it (a no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class StepTimer:
    """Wall-clock laps of one step (draft, then verify), synchronizing the device; free when disabled."""

    def __init__(self, device: torch.device, enabled: bool):
        self.device, self.enabled = device, enabled
        self.last = 0.0

    def start(self) -> None:
        if self.enabled:
            sync_device(self.device)
            self.last = time.perf_counter()

    def lap(self) -> float | None:
        if not self.enabled:
            return None
        sync_device(self.device)
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        return seconds
