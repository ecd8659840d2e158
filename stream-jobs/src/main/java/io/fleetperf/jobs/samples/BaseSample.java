package io.fleetperf.jobs.samples;

/** Identity and time every sample carries; public fields so Flink treats subclasses as POJOs. */
public abstract class BaseSample implements Sample {
  public String hostId;
  public String hostname;
  public long ts;

  /** The source stream the sample came from (origin file or command); one stream is in order. */
  public String stream = "";

  /** The record came with the end-of-stream header (see {@link Sample#endOfStream()}). */
  public boolean endOfStream;

  /**
   * The stream's watermark promise that came with the record ({@link StreamWatermark}), or {@link
   * StreamWatermark#NONE}.
   */
  public long promised = StreamWatermark.NONE;

  @Override
  public long ts() {
    return ts;
  }

  @Override
  public String hostId() {
    return hostId;
  }

  @Override
  public String hostname() {
    return hostname;
  }

  @Override
  public boolean endOfStream() {
    return endOfStream;
  }

  @Override
  public long promised() {
    return promised;
  }

  @Override
  public String streamKey() {
    return hostId + "|" + stream;
  }
}
