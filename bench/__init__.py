import sys
from pathlib import Path

#: The installed command (``make setup``), as the benchmarks start it: ``python -m`` from the
#: checkout's root would import the checkout's ``smores_assembly``, which has no generated
#: interfaces (they exist only in the installed package).
SMORES_ASSEMBLE = str(Path(sys.prefix) / "bin" / "smores-assemble")
