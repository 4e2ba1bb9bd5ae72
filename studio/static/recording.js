// The recording of a call in its detail: the audio (fetched with the key
// in a header, never in a URL), a download, and the heard transcript
// following it: the entry playing is marked, and an entry clicked plays
// from where it starts.
import { h, session, explain, fmtSeconds, say } from "./lib.js";

// recordingPlayer returns the player of call id's recording rec (the call
// record's `recording`) beside its transcript list tr.
export function recordingPlayer(id, rec, tr) {
  const audio = h("audio", { controls: true, preload: "metadata", id: "recording-audio" });
  const status = h("p", { class: "status", role: "status", id: "recording-status" }, "Loading the recording…");
  const save = h("a", { class: "download", id: "recording-download", hidden: true, download: id + "." + rec.format }, "Download");
  const box = h("section", { class: "recording", id: "recording" },
    h("p", { class: "hint" }, "Two channels: the caller on the left, the agent on the right, ",
      fmtSeconds(rec.durationMs / 1000), ", kept until ", new Date(rec.expiresAt).toLocaleDateString(), "."),
    audio, h("div", { class: "inline" }, save, status));
  load(id, audio, save, status);
  const marks = rec.marks || [];
  const follow = () => {
    const ms = audio.currentTime * 1000;
    const on = marks.find((m) => ms >= m.startMs && ms < m.endMs);
    for (const li of tr.querySelectorAll("li[data-turn]")) {
      li.classList.toggle("playing", !!on && li.dataset.turn === String(on.turn));
    }
  };
  audio.addEventListener("timeupdate", follow);
  audio.addEventListener("seeked", follow);
  tr.addEventListener("click", (ev) => {
    const li = ev.target.closest("li[data-turn]");
    const m = li && marks.find((x) => String(x.turn) === li.dataset.turn);
    if (!m || !audio.src) return;
    audio.currentTime = m.startMs / 1000;
    follow();
  });
  tr.classList.add("seekable");
  return box;
}

async function load(id, audio, save, status) {
  try {
    const res = await fetch("/api/voice/calls/" + encodeURIComponent(id) + "/recording",
      { headers: { authorization: "Bearer " + session.key() }, cache: "no-store", credentials: "omit" });
    if (!res.ok) {
      let msg = res.statusText;
      try { msg = (await res.json()).error.message; } catch { /* not JSON */ }
      throw new Error(msg);
    }
    const url = URL.createObjectURL(await res.blob());
    audio.src = url;
    save.href = url;
    save.hidden = false;
    status.textContent = "";
  } catch (e) {
    say(status, "The recording could not be loaded: " + explain(e));
  }
}
