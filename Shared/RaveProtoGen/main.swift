// rave-protogen: reads a protoc descriptor set and writes the Swift side of Proto/.
print("usage: rave-protogen --descriptors FILE --messages-out DIR --services-out DIR")
