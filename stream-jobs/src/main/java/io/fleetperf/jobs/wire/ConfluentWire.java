package io.fleetperf.jobs.wire;

import java.nio.ByteBuffer;

/** Confluent wire format: magic byte 0, 4-byte big-endian schema id, then Avro binary. */
final class ConfluentWire {
  static final byte MAGIC = 0;
  static final int HEADER = 5;

  private ConfluentWire() {}

  /** Schema id of a framed message; throws if the frame is not Confluent's. */
  static int schemaId(byte[] message) {
    if (message == null || message.length < HEADER || message[0] != MAGIC) {
      throw new IllegalArgumentException("not a Confluent-framed Avro message");
    }
    return ByteBuffer.wrap(message, 1, 4).getInt();
  }

  static byte[] header(int schemaId) {
    return ByteBuffer.allocate(HEADER).put(MAGIC).putInt(schemaId).array();
  }
}
