import os
import time


def tr(label: str, job_id: object = "") -> None:
    with open("/tmp/gap/trace.log", "a") as f:
        f.write(f"{time.time():.4f} {os.getpid()} {job_id} {label}\n")
