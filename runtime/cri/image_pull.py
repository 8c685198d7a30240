"""PullImage: fetch an image (with the request's credentials) and answer its id."""

from __future__ import annotations

from proto.runtime.v1 import api_pb2
from runtime.errors import InvalidArgument
from runtime.image.config import Credentials

TYPE_CHECKING = False
if TYPE_CHECKING:
    from runtime.image.pull import Puller


def credentials(auth: api_pb2.AuthConfig) -> Credentials:
    return Credentials.from_fields(
        username=auth.username,
        password=auth.password,
        auth=auth.auth,
        identity_token=auth.identity_token,
        registry_token=auth.registry_token,
    )


def pull_image(puller: Puller, request: api_pb2.PullImageRequest) -> api_pb2.PullImageResponse:
    ref = request.image.image
    if not ref:
        raise InvalidArgument("PullImage: image.image is empty")
    creds = credentials(request.auth) if request.HasField("auth") else Credentials()
    rec = puller.pull(ref, creds)
    return api_pb2.PullImageResponse(image_ref=rec.id)
