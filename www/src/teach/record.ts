// Recording the image canvas as a WebM video (MediaRecorder on the canvas' captureStream).
// The caller draws the frames; `frame()` asks the stream for one after each image is shown.

export interface CanvasRecorder {
  /** Push the canvas's current picture into the video. */
  frame(): void;
  /** Stop and return the video. */
  stop(): Promise<Blob>;
  mimeType: string;
}

export function videoMimeType(): string | null {
  if (typeof MediaRecorder === 'undefined') return null;
  for (const t of ['video/webm;codecs=vp9', 'video/webm;codecs=vp8', 'video/webm']) if (MediaRecorder.isTypeSupported(t)) return t;
  return null;
}

export function recordCanvas(canvas: HTMLCanvasElement, fps = 30): CanvasRecorder {
  const mimeType = videoMimeType();
  if (!mimeType || typeof canvas.captureStream !== 'function') {
    throw new Error('video export: this browser cannot record a canvas (no MediaRecorder with WebM)');
  }
  const stream = canvas.captureStream(fps);
  const track = stream.getVideoTracks()[0] as MediaStreamTrack & { requestFrame?: () => void };
  const rec = new MediaRecorder(stream, { mimeType, videoBitsPerSecond: 8_000_000 });
  const chunks: Blob[] = [];
  rec.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
  rec.start(250);
  return {
    mimeType,
    frame: () => track.requestFrame?.(),
    stop: () => new Promise<Blob>((done, fail) => {
      rec.onstop = () => {
        for (const t of stream.getTracks()) t.stop();
        const blob = new Blob(chunks, { type: mimeType.split(';')[0] });
        if (blob.size) done(blob);
        else fail(new Error('video export: the recorder produced no data'));
      };
      rec.onerror = () => fail(new Error('video export: the recorder failed'));
      if (rec.state !== 'inactive') rec.stop();
    }),
  };
}
