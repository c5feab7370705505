"""The two messages of grpc.health.v1.Health/Check, built at import time.

Debian's python3-grpcio does not ship grpcio-health-checking, and the two messages are small
enough to describe here. They live in a private descriptor pool, so importing grpc_health as
well does not clash.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

CHECK_METHOD = "/grpc.health.v1.Health/Check"


def _build():
    proto = descriptor_pb2.FileDescriptorProto(
        name="adaptd_client/grpc_health_v1.proto", package="grpc.health.v1", syntax="proto3")
    field = descriptor_pb2.FieldDescriptorProto
    request = proto.message_type.add(name="HealthCheckRequest")
    request.field.add(name="service", number=1, type=field.TYPE_STRING,
                      label=field.LABEL_OPTIONAL)
    response = proto.message_type.add(name="HealthCheckResponse")
    status = response.enum_type.add(name="ServingStatus")
    for number, name in enumerate(("UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN")):
        status.value.add(name=name, number=number)
    response.field.add(name="status", number=1, type=field.TYPE_ENUM,
                       type_name=".grpc.health.v1.HealthCheckResponse.ServingStatus",
                       label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    request_type = pool.FindMessageTypeByName("grpc.health.v1.HealthCheckRequest")
    response_type = pool.FindMessageTypeByName("grpc.health.v1.HealthCheckResponse")
    # protobuf >= 4.22 has GetMessageClass (and 7 dropped GetPrototype); Debian's 3.21 has not.
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:
        get_class = message_factory.MessageFactory(pool).GetPrototype
    return get_class(request_type), get_class(response_type)


HealthCheckRequest, HealthCheckResponse = _build()


def status_name(response):
    """The response's serving status as a name, e.g. "SERVING"."""
    return HealthCheckResponse.DESCRIPTOR.enum_types_by_name["ServingStatus"].values_by_number[
        response.status].name
