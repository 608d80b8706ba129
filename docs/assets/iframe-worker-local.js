/* Search on a copy of the site opened from disk (file://), with nothing
   fetched from elsewhere. A page opened from disk may not start a Web Worker,
   so the search worker's script runs in a hidden frame of the page instead,
   and messages go between the page and the frame as they would to a worker.
   Served over HTTP, browsers start real workers and this does nothing. */
(function () {
  if (location.protocol !== "file:") return;

  function FrameWorker(url) {
    var events = document.createElement("span");  // dispatches the worker's messages
    var frame = document.createElement("iframe");
    frame.style.display = "none";
    (document.body || document.documentElement).appendChild(frame);
    var scope = frame.contentWindow;
    var worker = this;
    this._events = events;
    this._frame = frame;
    this._scope = scope;
    // The worker's own postMessage(data) reaches the page.
    scope.postMessage = function (data) {
      setTimeout(function () {
        var event = new MessageEvent("message", { data: data });
        events.dispatchEvent(event);
        if (typeof worker.onmessage === "function") worker.onmessage(event);
      }, 0);
    };
    scope.importScripts = function () {
      throw new Error("importScripts is not available to a worker of a page opened from disk");
    };
    var script = scope.document.createElement("script");
    script.src = new URL(url, location.href).href;
    this._ready = new Promise(function (resolve) { script.onload = resolve; });
    scope.document.head.appendChild(script);
  }
  FrameWorker.prototype.postMessage = function (data) {
    var scope = this._scope;
    this._ready.then(function () { scope.dispatchEvent(new MessageEvent("message", { data: data })); });
  };
  FrameWorker.prototype.addEventListener = function (type, listener, options) {
    this._events.addEventListener(type, listener, options);
  };
  FrameWorker.prototype.removeEventListener = function (type, listener, options) {
    this._events.removeEventListener(type, listener, options);
  };
  FrameWorker.prototype.terminate = function () { this._frame.remove(); };
  window.Worker = FrameWorker;
})();
