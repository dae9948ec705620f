"""Reading a peer's capabilities, and what an input request (elicitation, sampling,
roots) needs of the client it goes to: the checks a session makes itself, for an
intermediary that passes such requests on."""

from ._gates import declared_elicitation_modes, has_capability
from ._stateless import check_input_required, lacking_capabilities, missing_input_capabilities
from ._versions import INPUT_REQUEST_CAPABILITIES

__all__ = [
    "INPUT_REQUEST_CAPABILITIES",
    "check_input_required",
    "declared_elicitation_modes",
    "has_capability",
    "lacking_capabilities",
    "missing_input_capabilities",
]
