// Quick compare: the port field's placeholder follows the driver (its default port), as the server fills it in.
const ports = JSON.parse(document.getElementById("default-ports").textContent);
const driver = document.getElementById("id_new_driver");
const port = document.getElementById("id_new_port");

function showDefaultPort() {
  if (driver && port) port.placeholder = String(ports[driver.value] ?? "");
}

if (driver) driver.addEventListener("change", showDefaultPort);
showDefaultPort();
